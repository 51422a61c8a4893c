#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# julia_runtests.sh HVDRUN NP LIBDIR PACKAGE: runs PACKAGE/test/runtests.jl on NP ranks with
# libhvd from LIBDIR; skipped (exit 77) where julia is not on PATH.
hvdrun=$1 np=$2 libdir=$3 pkg=$4
if ! command -v julia >/dev/null 2>&1; then
  echo "julia.runtests: SKIPPED: no julia on PATH (neither Debian 12 nor PyPI provides a Julia" \
    "runtime); Hvd.jl's constants and struct layouts are still checked by bindings.coverage"
  exit 77
fi
HVD_LIBRARY_PATH=$libdir exec "$hvdrun" -np "$np" julia --project="$pkg" "$pkg/test/runtests.jl"
