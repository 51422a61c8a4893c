#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rpm_contents.sh OUT VERSION WITH_BENCH: the RPMs built by rpm_build.sh hold what they should.
source "$(dirname "$0")/common.sh"
out=$1 version=$2 with_bench=$3
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
rpm -qlp "$runtime" >"$out/libhvd.list"
rpm -qlp "$devel" >"$out/libhvd-devel.list"
echo "== libhvd"; cat "$out/libhvd.list"
echo "== libhvd-devel"; cat "$out/libhvd-devel.list"

pkg_require_file "$out/libhvd.list" "$lib/libhvd.so.1"
pkg_require_file "$out/libhvd.list" "$lib/libhvd.so.$version"
pkg_require_file "$out/libhvd.list" "/usr/bin/hvdrun"
if [ "$with_bench" = 1 ]; then pkg_require_file "$out/libhvd.list" "/usr/bin/hvd_bench"; fi
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
echo "rpm_contents: libhvd and libhvd-devel $version hold the expected files"
