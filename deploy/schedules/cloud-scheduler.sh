#!/usr/bin/env bash
# Nightly Dataflow run: a Cloud Scheduler job that POSTs a Flex Template launch request
# (the template and image from deploy/dataflow/build.sh).
# Needs: the Cloud Scheduler API enabled; a scheduler service account (SCHEDULER_SA) with
# roles/dataflow.developer on the project and roles/iam.serviceAccountUser on the worker
# service account (WORKER_SA), which needs what deploy/dataflow/run.sh lists.
# PRINT_BODY=1 prints the launch request and exits (no gcloud call).
set -euo pipefail

PROJECT="${PROJECT:-my-project}"
REGION="${REGION:-us-central1}"
BUCKET="${BUCKET:-gs://my-project-trajcurate}"
IMAGE="${IMAGE:?set IMAGE to the image build.sh printed}"
TEMPLATE="${TEMPLATE:-${BUCKET}/templates/trajcurate.json}"
SCHEDULER_SA="${SCHEDULER_SA:-trajcurate-scheduler@${PROJECT}.iam.gserviceaccount.com}"
WORKER_SA="${WORKER_SA:-trajcurate-dataflow@${PROJECT}.iam.gserviceaccount.com}"
SCHEDULE="${SCHEDULE:-0 2 * * *}"   # 02:00 every day
TIME_ZONE="${TIME_ZONE:-Etc/UTC}"
INPUT="${INPUT:-${BUCKET}/trajectories/jobs}"
OUTPUT="${OUTPUT:-${BUCKET}/curated}"
MIN_SCORE="${MIN_SCORE:-0.6}"
NUM_SHARDS="${NUM_SHARDS:-8}"

BODY="$(mktemp)"
trap 'rm -f "$BODY"' EXIT
cat > "$BODY" <<JSON
{
  "launchParameter": {
    "jobName": "trajcurate-nightly",
    "containerSpecGcsPath": "${TEMPLATE}",
    "parameters": {
      "input": "${INPUT}",
      "output": "${OUTPUT}",
      "instance_status": "resolved",
      "min_score": "${MIN_SCORE}",
      "num_shards": "${NUM_SHARDS}",
      "sdk_container_image": "${IMAGE}"
    },
    "environment": {
      "serviceAccountEmail": "${WORKER_SA}",
      "tempLocation": "${BUCKET}/tmp",
      "stagingLocation": "${BUCKET}/staging"
    }
  }
}
JSON
if [[ "${PRINT_BODY:-0}" == 1 ]]; then cat "$BODY"; exit 0; fi

gcloud scheduler jobs create http trajcurate-nightly \
  --project "$PROJECT" \
  --location "$REGION" \
  --schedule "$SCHEDULE" \
  --time-zone "$TIME_ZONE" \
  --uri "https://dataflow.googleapis.com/v1b3/projects/${PROJECT}/locations/${REGION}/flexTemplates:launch" \
  --http-method POST \
  --headers "Content-Type=application/json" \
  --message-body-from-file "$BODY" \
  --oauth-service-account-email "$SCHEDULER_SA" \
  --oauth-token-scope "https://www.googleapis.com/auth/cloud-platform"

# Try it now instead of waiting for the schedule:
#   gcloud scheduler jobs run trajcurate-nightly --project "$PROJECT" --location "$REGION"
