#!/usr/bin/env bash
# Submit one trajcurate run to the docker-compose Flink cluster (docker-compose.yml).
#
# Shared filesystem: the SDK workers (in the beam-worker-pool container) read the inputs and
# write the outputs by path, and this driver checks the inputs, hashes them for
# --skip-unchanged and finalizes the outputs (manifests) by the same path. So INPUT and
# OUTPUT must lie under TRAJCURATE_DATA, which compose mounts into the worker container at the
# same absolute path as on this host. A path only this host sees gives empty results
# ("cannot read: No such file or directory" rejects); readers do not read gs:// or s3:// today.
#
# The driver's Python (3.11) and apache-beam (2.77.0) must match the SDK image.
set -euo pipefail

TRAJCURATE_DATA="${TRAJCURATE_DATA:-/srv/trajcurate}"
INPUT="${INPUT:-${TRAJCURATE_DATA}/jobs}"
OUTPUT="${OUTPUT:-${TRAJCURATE_DATA}/curated}"
TRAJCURATE="${TRAJCURATE:-trajcurate}"          # e.g. /path/to/repo/.venv/bin/trajcurate

case "$INPUT/" in "$TRAJCURATE_DATA"/*) ;; *) echo "INPUT must be under $TRAJCURATE_DATA" >&2; exit 2;; esac
case "$OUTPUT/" in "$TRAJCURATE_DATA"/*) ;; *) echo "OUTPUT must be under $TRAJCURATE_DATA" >&2; exit 2;; esac
for arg in "$@"; do
  case "$arg" in --input|--input=*|--output|--output=*)
    echo "set INPUT / OUTPUT in the environment, not as arguments" >&2; exit 2;; esac
done

# Start the cluster once (as the user who runs this script, so outputs stay writable):
#   TRAJCURATE_DATA=$TRAJCURATE_DATA TRAJCURATE_UID=$(id -u) TRAJCURATE_GID=$(id -g) \
#     docker compose -f deploy/flink/docker-compose.yml up -d --build

exec "$TRAJCURATE" run \
  --input "$INPUT" \
  --output "$OUTPUT" \
  --no-progress \
  "$@" \
  --runner PortableRunner \
  --job_endpoint localhost:8099 \
  --artifact_endpoint localhost:8098 \
  --environment_type EXTERNAL \
  --environment_config localhost:50000 \
  --parallelism 4
# Extra args go to trajcurate or Beam, e.g.: run-local.sh --min-score 0.6 --skip-unchanged
