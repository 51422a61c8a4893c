#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rpm_contents.sh OUT VERSION LIBRARY_VERSION WITH_BENCH WITH_GPU: the RPMs built by rpm_build.sh
# hold what they should (WITH_GPU 1: libhvd-nccl too).
source "$(dirname "$0")/common.sh"
out=$1 version=$2 libversion=$3 with_bench=$4 with_gpu=${5:-0}
rpms=$out/rpmbuild/RPMS
lib=$(rpm --eval '%{_libdir}')
rpm_of() {
  local f
  for f in "$rpms"/*/"$1"-"$version"-*.rpm; do
    [ -f "$f" ] && [ "$(rpm -qp --qf '%{NAME}' "$f")" = "$1" ] && { echo "$f"; return; }
  done
  pkg_fail "no $1 $version package in $rpms"
}
runtime=$(rpm_of libhvd) devel=$(rpm_of libhvd-devel)
for p in libhvd libhvd-devel libhvd-tools python3-hvd; do
  rpm -qlp "$(rpm_of $p)" >"$out/$p.list"
  echo "== $p"; cat "$out/$p.list"
done

pkg_require_file "$out/libhvd.list" "$lib/libhvd.so.1"
pkg_require_file "$out/libhvd.list" "$lib/libhvd.so.$libversion"
! grep -q '^/usr/bin/' "$out/libhvd.list" || pkg_fail "libhvd holds programs (libhvd-tools' files)"
pkg_require_file "$out/libhvd-tools.list" "/usr/bin/hvdrun"
if [ "$with_bench" = 1 ]; then pkg_require_file "$out/libhvd-tools.list" "/usr/bin/hvd_bench"; fi
grep -qE '^/usr/share/man/man1/hvdrun\.1' "$out/libhvd-tools.list" ||
  pkg_fail "libhvd-tools lacks hvdrun's manual page"
# the hvd package (its ctypes core at least, and hvd.torch) in the python3's site-packages
for f in hvd/__init__.py hvd/torch/__init__.py; do
  grep -qE "/site-packages/$f\$" "$out/python3-hvd.list" || pkg_fail "python3-hvd lacks $f"
done
# the Apache-2.0 text the License tag declares (in libhvd/, or libhvd-VERSION/ where
# %_docdir_fmt keeps the version, as Debian's rpm does)
licenses=$(rpm --eval '%{_defaultlicensedir}')
grep -qxE "$licenses/libhvd(-$version)?/LICENSE" "$out/libhvd.list" ||
  pkg_fail "libhvd lacks $licenses/libhvd/LICENSE"
for f in /usr/include/hvd/hvd.h /usr/include/hvd/hvd_version.h "$lib/libhvd.so" \
  "$lib/pkgconfig/hvd.pc" "$lib/cmake/hvd/hvdConfig.cmake" "$lib/cmake/hvd/hvdConfigVersion.cmake" \
  "$lib/cmake/hvd/hvdTargets.cmake"; do
  pkg_require_file "$out/libhvd-devel.list" "$f"
done
! grep -q '^/usr/include\|/libhvd\.so$\|pkgconfig\|/cmake/' "$out/libhvd.list" ||
  pkg_fail "libhvd holds development files"
requires=$(rpm -qp --requires "$devel")
grep -qE "^libhvd(\(x86-64\))? = $version-" <<<"$requires" ||
  pkg_fail "libhvd-devel does not require this exact libhvd: $requires"
for p in libhvd-tools python3-hvd; do
  grep -qE "^libhvd(\(x86-64\))? = $version-" <<<"$(rpm -qp --requires "$(rpm_of $p)")" ||
    pkg_fail "$p does not require this exact libhvd"
done
echo "rpm_contents: libhvd, libhvd-devel, libhvd-tools and python3-hvd $version hold the expected files"
if [ "$with_gpu" = 1 ]; then
  nccl=$(rpm_of libhvd-nccl)
  rpm -qlp "$nccl" >"$out/libhvd-nccl.list"
  pkg_require_file "$out/libhvd-nccl.list" "$lib/libhvd-nccl.so.1"
  requires=$(rpm -qp --requires "$nccl")
  grep -qE "^libhvd(\([a-z0-9_-]+\))? = $version-" <<<"$requires" ||
    pkg_fail "libhvd-nccl does not require this exact libhvd: $requires"
  soname=$(rpm -qp --provides "$nccl")
  grep -qE "^libhvd-nccl\.so\.1(\(|$)" <<<"$soname" ||
    pkg_fail "libhvd-nccl does not provide the soname libhvd-nccl.so.1: $soname"
  ! grep -qiE 'cuda|nccl' <<<"$requires" || pkg_fail "libhvd-nccl requires CUDA or NCCL: $requires"
  echo "rpm_contents: libhvd-nccl holds the GPU module and requires libhvd $version"
fi
! grep -q 'libhvd-nccl' "$out/libhvd.list" || pkg_fail "libhvd holds the GPU module"
! grep -qiE 'cuda|nccl' <<<"$(rpm -qp --requires "$runtime")" || pkg_fail "libhvd requires CUDA or NCCL"
