#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_python.sh OUT: Debian's python3 imports the hvd package unpacked from python3-hvd in
# OUT/root (and nothing from the build tree), with both backends, and runs a 2-rank job under
# the packaged hvdrun: NumPy allreduce and, when python3-torch is installed, hvd.torch; with
# libhvd-nccl1 unpacked too, an op on CUDA memory reaches the packaged GPU module.
source "$(dirname "$0")/common.sh"
out=$(cd "$1" && pwd)
root=$out/root
libdir=$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pkgdir=$root/usr/lib/python3/dist-packages
work=$out/python
rm -rf "$work"
mkdir -p "$work"
[ -f "$pkgdir/hvd/__init__.py" ] || pkg_fail "python3-hvd did not unpack hvd into $pkgdir"
ls "$pkgdir"/hvd/_hvd_pybind*.so >/dev/null 2>&1 || pkg_fail "python3-hvd ships no pybind11 extension"
grep -q "/usr/lib/.*/libhvd.so.1" "$pkgdir/hvd/_build_config.py" ||
  pkg_fail "the packaged hvd looks for libhvd outside /usr/lib: $(cat "$pkgdir/hvd/_build_config.py")"

cat >"$work/job.py" <<'PY'
import os
import sys

import numpy as np

import hvd

expect_dir = sys.argv[1]
assert hvd.__file__.startswith(expect_dir), hvd.__file__
hvd.init()
out = hvd.allreduce(np.full(4, hvd.rank() + 1.0), op=hvd.Sum)
assert out.tolist() == [3.0] * 4, out
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    import hvd.torch as ht
    t = ht.allreduce(torch.ones(3) * ht.rank(), op=ht.Sum)
    assert t.tolist() == [1.0] * 3, t
module = sys.argv[2]  # the packaged GPU module, or "" without libhvd-nccl1
if module and not hvd.cuda_built():  # no GPU here: the refusal names the module it loaded
    class OnDevice:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "version": 3,
                                    "data": (0x7F0000001000, False)}

    try:
        hvd.allreduce_(OnDevice(), op=hvd.Sum)
    except ValueError as e:
        assert "GPU module " + module in str(e), str(e)
    else:
        raise AssertionError("an op on CUDA memory passed without a GPU")
print("rank %d: backend %s, numpy%s ok" % (hvd.rank(), hvd.backend_name(),
                                           " and torch" if torch is not None else ""))
hvd.shutdown()
PY

# The loader finds the packaged library (the package records /usr/lib/..., which is the
# build machine's, not the scratch root's).
export LD_LIBRARY_PATH=$libdir PYTHONPATH=$pkgdir PYTHONDONTWRITEBYTECODE=1
module=""  # with libhvd-nccl1 unpacked: libhvd finds it beside itself
[ -f "$libdir/libhvd-nccl.so.1" ] && module=$libdir/libhvd-nccl.so.1
for backend in pybind ctypes; do
  rc=0
  HVD_PY_BACKEND=$backend timeout 120 "$root/usr/bin/hvdrun" -np 2 /usr/bin/python3 \
    "$work/job.py" "$pkgdir" "$module" >"$work/$backend.log" 2>&1 || rc=$?
  cat "$work/$backend.log"
  [ $rc -eq 0 ] || pkg_fail "the packaged hvd ($backend backend) failed with exit code $rc"
  for r in 0 1; do
    grep -q "^\[$r\]<stdout>: rank $r: backend $backend, numpy" "$work/$backend.log" ||
      pkg_fail "no success line from rank $r ($backend)"
  done
done
echo "deb_python: python3-hvd imports and runs 2-rank jobs with both backends"
