#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install_test.sh CMAKE BUILD_DIR PYTHON: `cmake --install` into a fresh prefix (not the one
# configured), then PYTHON imports hvd from there with each backend and allreduces as a 1-rank
# job: the installed package must find the installed libhvd by itself (relative path, rpath).
set -euo pipefail
cmake=$1 build=$2 python=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
pkg=$(dirname "$(find "$prefix" -path '*/hvd/__init__.py' | head -1)")
[ -n "$pkg" ] && [ -d "$pkg" ] || { echo "install_test: no hvd package under $prefix" >&2; exit 1; }
site=$(dirname "$pkg")
backends=ctypes
ls "$pkg"/_hvd_pybind*.so >/dev/null 2>&1 && backends="ctypes pybind"
for backend in $backends; do
  out=$(cd / && env -u HVD_LIBRARY -u LD_LIBRARY_PATH HVD_PY_BACKEND=$backend PYTHONPATH="$site" \
    "$python" -c "
import hvd
assert hvd.__file__.startswith('$site'), hvd.__file__
hvd.init()
print(hvd.backend_name(), hvd.allreduce([1.0, 2.0], op=hvd.Sum).tolist())
hvd.shutdown()")
  [ "$out" = "$backend [1.0, 2.0]" ] || { echo "install_test: $backend printed '$out'" >&2; exit 1; }
  echo "install_test: installed hvd works with the $backend backend"
done
