#!/usr/bin/env bash
# Launch one Dataflow job from the trajcurate Flex Template built by build.sh.
# Needs: roles/dataflow.developer for you, and a worker service account with
# roles/dataflow.worker, read on the input and write on the output/temp buckets, and
# roles/artifactregistry.reader on the image repo.
set -euo pipefail

PROJECT="${PROJECT:-my-project}"
REGION="${REGION:-us-central1}"
BUCKET="${BUCKET:-gs://my-project-trajcurate}"
IMAGE="${IMAGE:?set IMAGE to the image build.sh printed}"
TEMPLATE="${TEMPLATE:-${BUCKET}/templates/trajcurate.json}"
SERVICE_ACCOUNT="${SERVICE_ACCOUNT:-trajcurate-dataflow@${PROJECT}.iam.gserviceaccount.com}"

INPUT="${INPUT:-${BUCKET}/trajectories/jobs}"
OUTPUT="${OUTPUT:-${BUCKET}/curated}"
INSTANCE_STATUS="${INSTANCE_STATUS:-resolved}"
MIN_SCORE="${MIN_SCORE:-0.6}"
NUM_SHARDS="${NUM_SHARDS:-8}"

# Parameters are joined with '^~^' as the delimiter so values may hold commas.
gcloud dataflow flex-template run "trajcurate-$(date -u +%Y%m%d-%H%M%S)" \
  --project "$PROJECT" \
  --region "$REGION" \
  --template-file-gcs-location "$TEMPLATE" \
  --service-account-email "$SERVICE_ACCOUNT" \
  --temp-location "${BUCKET}/tmp" \
  --staging-location "${BUCKET}/staging" \
  --parameters "^~^input=${INPUT}~output=${OUTPUT}~instance_status=${INSTANCE_STATUS}~min_score=${MIN_SCORE}~num_shards=${NUM_SHARDS}~sdk_container_image=${IMAGE}"
  # optional: add "~config=gs://.../options.yaml" to the --parameters value

# Validate the same job offline first (no GCP contact; needs `pip install 'trajcurate[gcp]'`):
#   python deploy/dataflow/launcher.py --input=gs://my-bucket/in --output=gs://my-bucket/out --min_score=0.6 \
#     --runner=DataflowRunner --dry_run=True --project=my-project --region=us-central1 \
#     --temp_location=gs://my-bucket/tmp --staging_location=gs://my-bucket/staging
