#!/usr/bin/env bash
# Build the trajcurate Flex Template: the container image (Cloud Build) and the template spec.
# Run from anywhere; it works from the repo root. Needs: gcloud logged in, the Cloud Build,
# Artifact Registry and Dataflow APIs enabled, and an Artifact Registry Docker repo.
set -euo pipefail

PROJECT="${PROJECT:-my-project}"
REGION="${REGION:-us-central1}"
BUCKET="${BUCKET:-gs://my-project-trajcurate}"                 # template spec, temp, staging
REPO="${REPO:-trajcurate}"                                       # Artifact Registry repo
TAG="${TAG:-$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo latest)}"
IMAGE="${IMAGE:-${REGION}-docker.pkg.dev/${PROJECT}/${REPO}/trajcurate-dataflow:${TAG}}"
TEMPLATE="${TEMPLATE:-${BUCKET}/templates/trajcurate.json}"

cd "$(dirname "$0")/../.."  # the repo root: the image build context

# One-time setup (uncomment on first use):
# gcloud artifacts repositories create "$REPO" --project "$PROJECT" --location "$REGION" \
#   --repository-format docker
# gcloud storage buckets create "$BUCKET" --project "$PROJECT" --location "$REGION"

gcloud builds submit . \
  --project "$PROJECT" \
  --region "$REGION" \
  --config deploy/dataflow/cloudbuild.yaml \
  --ignore-file deploy/dataflow/gcloudignore \
  --substitutions "_IMAGE=${IMAGE}"

gcloud dataflow flex-template build "$TEMPLATE" \
  --project "$PROJECT" \
  --image "$IMAGE" \
  --sdk-language PYTHON \
  --metadata-file deploy/dataflow/metadata.json

echo "image:    $IMAGE"
echo "template: $TEMPLATE"
