#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds everything with warnings as errors, runs every test suite.
#   scripts/test.sh            all tests
#   scripts/test.sh -L unit    extra arguments go to ctest
set -euo pipefail
source "$(dirname "$0")/common.sh"

hvd_install_missing
hvd_python_venv
# The packaging tests (label packaging: .deb and .rpm builds, pkg-config and find_package
# users) are off by default in CMake; this script runs them too. hvd.torch is tested on the
# venv's PyTorch and on Debian's (/usr/bin/python3).
hvd_build -DHVD_BUILD_PACKAGING_TESTS=ON \
  "-DHVD_PYTHON_TORCH_INTERPRETERS=$HVD_VENV/bin/python;/usr/bin/python3"
ctest_bin="$(dirname "$(hvd_cmake)")/ctest"
hvd_log "running the tests"
cd "$BUILD_DIR"
"$ctest_bin" --output-on-failure -j "$JOBS" "$@"
