#!/usr/bin/env bash
# Installs what is missing, builds libhvd, and runs the demo job: 4 ranks started by hvdrun
# allreduce, allgather and broadcast real tensors, check the results, and report bandwidth.
set -euo pipefail
source "$(dirname "$0")/common.sh"

hvd_install_missing
hvd_build
hvd_log "hvdrun -np 4 hvd_demo"
exec "$BUILD_DIR/tools/hvdrun/hvdrun" -np 4 "$BUILD_DIR/examples/c/hvd_demo"
