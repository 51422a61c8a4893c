#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_contents.sh OUT VERSION LIBRARY_VERSION WITH_BENCH: each package built by deb_build.sh holds what it
# should (and not its neighbour's files), depends on what it should and ships the symbols file.
source "$(dirname "$0")/common.sh"
out=$1 version=$2 libversion=$3 with_bench=$4
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=/usr/lib/$ma

# OUT/<package>.list: one path per line; a symlink as "path -> target".
for deb in "$out"/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  dpkg-deb -c "$deb" | awk '{ $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); sub(/^\./, ""); print }' \
    >"$out/$pkg.list"
done

runtime=$out/libhvd1.list dev=$out/libhvd-dev.list tools=$out/libhvd-tools.list
pkg_require_file "$runtime" "$lib/libhvd.so.$libversion"
pkg_require_file "$runtime" "$lib/libhvd.so.1 -> libhvd.so.$libversion"
pkg_require_file "$runtime" "/usr/share/doc/libhvd1/copyright"
pkg_require_file "$dev" "/usr/include/hvd/hvd.h"
pkg_require_file "$dev" "/usr/include/hvd/hvd_version.h"
pkg_require_file "$dev" "$lib/libhvd.so -> libhvd.so.1"
pkg_require_file "$dev" "$lib/pkgconfig/hvd.pc"
for f in hvdConfig.cmake hvdConfigVersion.cmake hvdTargets.cmake; do
  pkg_require_file "$dev" "$lib/cmake/hvd/$f"
done
pkg_require_file "$tools" "/usr/bin/hvdrun"
if [ "$with_bench" = 1 ]; then pkg_require_file "$tools" "/usr/bin/hvd_bench"; fi
! grep -q '^/usr/include\|\.so ->\|pkgconfig\|/cmake/' "$runtime" || pkg_fail "libhvd1 holds development files"
! grep -q '/usr/bin/' "$runtime" "$dev" || pkg_fail "the library packages hold programs"
! grep -q 'libhvd\.so' "$tools" || pkg_fail "libhvd-tools holds the library"

deb_of() { echo "$out/$1"_*.deb; }
[ "$(dpkg-deb -f "$(deb_of libhvd-dev)" Version)" = "$(dpkg-deb -f "$(deb_of libhvd1)" Version)" ] ||
  pkg_fail "libhvd-dev and libhvd1 have different versions"
# (Outputs are captured before grep: grep -q in a pipeline may end its writer with SIGPIPE.)
depends=$(dpkg-deb -f "$(deb_of libhvd-dev)" Depends)
grep -qE "(^|, )libhvd1 \(= $version-" <<<"$depends" ||
  pkg_fail "libhvd-dev does not depend on this exact libhvd1: $depends"
# dpkg-gensymbols checked debian/libhvd1.symbols at level 4 while building; it must ship.
control=$(dpkg-deb --ctrl-tarfile "$(deb_of libhvd1)" | tar -t)
grep -qx './symbols' <<<"$control" || pkg_fail "libhvd1 ships no symbols file"
grep -qx "Version: $version" "$out/root$lib/pkgconfig/hvd.pc" || pkg_fail "hvd.pc has the wrong Version"
grep -qx "prefix=/usr" "$out/root$lib/pkgconfig/hvd.pc" || pkg_fail "hvd.pc prefix is not /usr"
grep -q "HVD_VERSION_STRING \"$version\"" "$out/root/usr/include/hvd/hvd_version.h" ||
  pkg_fail "the packaged hvd_version.h is not version $version"
echo "deb_contents: libhvd1, libhvd-dev and libhvd-tools $version hold the expected files"
python=$out/python3-hvd.list
pkg_require_file "$python" "/usr/lib/python3/dist-packages/hvd/__init__.py"
pkg_require_file "$python" "/usr/lib/python3/dist-packages/hvd/torch/__init__.py"
! grep -q 'libhvd\.so\|/usr/bin/' "$python" || pkg_fail "python3-hvd holds the library or programs"
depends=$(dpkg-deb -f "$(deb_of python3-hvd)" Depends)
grep -qE "(^|, )libhvd1 \(= $version-" <<<"$depends" ||
  pkg_fail "python3-hvd does not depend on this exact libhvd1: $depends"
grep -qE "(^|, )python3( |,|$)" <<<"$depends" || pkg_fail "python3-hvd does not depend on python3: $depends"
echo "deb_contents: python3-hvd holds the hvd package and depends on libhvd1 $version"
java=$out/libhvd-java.list
pkg_require_file "$java" "/usr/share/java/libhvd-$version.jar"
pkg_require_file "$java" "/usr/share/java/libhvd.jar -> libhvd-$version.jar"
! grep -q 'libhvd\.so\|/usr/bin/' "$java" || pkg_fail "libhvd-java holds the library or programs"
[ "$(dpkg-deb -f "$(deb_of libhvd-java)" Architecture)" = all ] || pkg_fail "libhvd-java is not Architecture: all"
depends=$(dpkg-deb -f "$(deb_of libhvd-java)" Depends)
grep -qE "(^|, )libhvd1 \(>= $version-" <<<"$depends" ||
  pkg_fail "libhvd-java does not depend on libhvd1 >= $version: $depends"
grep -qE "(^|, )libjna-java( |,|$)" <<<"$depends" || pkg_fail "libhvd-java does not depend on libjna-java: $depends"
echo "deb_contents: libhvd-java holds libhvd.jar and depends on libhvd1 $version and libjna-java"
gpu=$out/libhvd-nccl1.list
if [ -f "$gpu" ]; then
  pkg_require_file "$gpu" "$lib/libhvd-nccl.so.1"
  depends=$(dpkg-deb -f "$(deb_of libhvd-nccl1)" Depends)
  grep -qE "(^|, )libhvd1 \(= $version-" <<<"$depends" ||
    pkg_fail "libhvd-nccl1 does not depend on this exact libhvd1: $depends"
  # The CUDA runtime is linked in and NCCL and the driver are loaded at run time: nothing of
  # CUDA is a dependency, of the module or of libhvd1.
  dynamic=$(readelf -d "$out/root$lib/libhvd-nccl.so.1")
  grep -q 'Library soname: \[libhvd-nccl.so.1\]' <<<"$dynamic" || pkg_fail "the GPU module has no soname"
  ! grep -qiE 'NEEDED.*(cuda|nccl)' <<<"$dynamic" || pkg_fail "the GPU module needs CUDA libraries: $dynamic"
  echo "deb_contents: libhvd-nccl1 holds the GPU module and depends on libhvd1 $version"
fi
! grep -q 'libhvd-nccl' "$runtime" || pkg_fail "libhvd1 holds the GPU module"
! grep -qiE 'cuda|nccl' <<<"$(dpkg-deb -f "$(deb_of libhvd1)" Depends Suggests Recommends)" ||
  pkg_fail "libhvd1 depends on CUDA or NCCL"
! grep -qiE 'NEEDED.*(cuda|nccl)' <<<"$(readelf -d "$out/root$lib/libhvd.so.1")" ||
  pkg_fail "libhvd.so.1 needs CUDA or NCCL libraries"
echo "deb_contents: libhvd1 is free of CUDA and NCCL"
