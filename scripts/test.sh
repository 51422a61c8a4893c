#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds everything with warnings as errors, runs every test suite.
#   scripts/test.sh            all tests
#   scripts/test.sh -L unit    extra arguments go to ctest
#   scripts/test.sh --sanitize[=address|thread] [ctest arguments]
#       a sanitized build in its own directory (build-asan, build-tsan): ASan+UBSan runs the
#       unit, mp, hvdrun and fuzz suites; TSan the unit tests that run threads (label threads)
set -euo pipefail

sanitize=""
case "${1:-}" in
  --sanitize | --sanitize=address) sanitize=address ;;
  --sanitize=thread) sanitize=thread ;;
  --sanitize=*)
    echo "test.sh: --sanitize takes address or thread, not '${1#--sanitize=}'" >&2
    exit 2
    ;;
esac
if [ -n "$sanitize" ]; then
  shift
  dir=build-asan
  [ "$sanitize" = thread ] && dir=build-tsan
  BUILD_DIR=${BUILD_DIR:-$(cd "$(dirname "$0")/.." && pwd)/$dir}
fi
source "$(dirname "$0")/common.sh"

if [ -z "$sanitize" ]; then
  hvd_install_missing "${HVD_APT_JAVA_PACKAGES[@]}"
else
  hvd_install_missing
fi
ctest_args=()
if [ -z "$sanitize" ]; then
  hvd_python_venv
  mapfile -t gpu_args < <(hvd_nccl_args)
  jax_py=$(hvd_jax_venv)
  tf_py=$(hvd_tf_venv)
  cluster_py=$(hvd_cluster_venv)
  # The packaging tests (label packaging: .deb and .rpm builds, pkg-config and find_package
  # users) are off by default in CMake; this script runs them too. hvd.torch is tested on the
  # venv's PyTorch and on Debian's (/usr/bin/python3).
  hvd_build -DHVD_BUILD_PACKAGING_TESTS=ON \
    "-DHVD_PYTHON_TORCH_INTERPRETERS=$HVD_VENV/bin/python;/usr/bin/python3" "${gpu_args[@]}" \
    "-DHVD_PYTHON_JAX_INTERPRETER=$jax_py" "-DHVD_PYTHON_CLUSTER_INTERPRETER=$cluster_py" \
    "-DHVD_PYTHON_TF_INTERPRETER=$tf_py"
else
  # No Python package: a sanitized libhvd does not load into a plain interpreter (see
  # tests/python/tests.cmake).
  # Nor the GPU module: nvcc's objects are not instrumented.
  hvd_build -DHVD_SANITIZE=$sanitize -DHVD_BUILD_PYTHON=OFF -DHVD_GPU=OFF
  if [ "$sanitize" = address ]; then
    ctest_args=(-L '^(unit|mp|hvdrun|fuzz)$')
  else
    ctest_args=(-L '^threads$')
  fi
fi
ctest_bin="$(dirname "$(hvd_cmake)")/ctest"
hvd_log "running the tests${sanitize:+ (sanitizer: $sanitize)}"
cd "$BUILD_DIR"
"$ctest_bin" --output-on-failure -j "$JOBS" "${ctest_args[@]}" "$@"
