#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds libhvd, and runs the demo jobs: 4 ranks started by hvdrun
# allreduce, allgather and broadcast real tensors, check the results and report bandwidth;
# then 2 ranks train a PyTorch classifier on scikit-learn's digits with hvd.torch (Debian's
# python3-torch) and print its test accuracy.
set -euo pipefail
source "$(dirname "$0")/common.sh"

hvd_install_missing
hvd_build
hvd_log "hvdrun -np 4 hvd_demo"
"$BUILD_DIR/tools/hvdrun/hvdrun" -np 4 "$BUILD_DIR/examples/c/hvd_demo"
hvd_log "hvdrun -np 2 python3 examples/python/torch_digits_train.py"
PYTHONPATH="$BUILD_DIR/python" exec "$BUILD_DIR/tools/hvdrun/hvdrun" -np 2 /usr/bin/python3 \
  "$HVD_ROOT/examples/python/torch_digits_train.py"
