#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_consumer.sh pkgconfig|cmake OUT CMAKE: builds consumer.c against the packages unpacked in
# OUT/root, through pkg-config alone or through find_package(hvd) alone, checks that it
# loads the packaged library, and runs it with 2 ranks under the packaged hvdrun.
source "$(dirname "$0")/common.sh"
how=$1 out=$(cd "$2" && pwd) cmake=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$out/root
libdir=$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$out/consumer-$how
rm -rf "$work"
mkdir -p "$work"

case $how in
pkgconfig)
  # The .pc file says prefix=/usr: the sysroot maps it into the scratch root, and only the
  # scratch root's pkg-config files are visible.
  export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$libdir/pkgconfig PKG_CONFIG_PATH=
  export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
  flags=$(pkg-config --cflags --libs hvd) || pkg_fail "pkg-config does not find hvd"
  echo "pkg-config --cflags --libs hvd: $flags"
  # shellcheck disable=SC2086 # flags are words
  ${CC:-cc} -std=c99 -Wall -Wextra -Werror -o "$work/consumer" "$here/consumer.c" $flags
  bin=$work/consumer
  ;;
cmake)
  pkg_logged "$work/configure.log" "$cmake" -S "$here/consumer" -B "$work/build" \
    -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
  found=$(sed -n 's/^hvd_DIR:PATH=//p' "$work/build/CMakeCache.txt")
  [ "$found" = "$libdir/cmake/hvd" ] || pkg_fail "find_package(hvd) found '$found', not the package's"
  pkg_logged "$work/build.log" "$cmake" --build "$work/build"
  bin=$work/build/hvd_consumer
  ;;
*) pkg_fail "usage: deb_consumer.sh pkgconfig|cmake OUT CMAKE" ;;
esac

export LD_LIBRARY_PATH=$libdir
resolved=$(ldd "$bin" | awk '$1 == "libhvd.so.1" {print $3}')
[ "$resolved" = "$libdir/libhvd.so.1" ] || pkg_fail "$bin loads libhvd.so.1 from '$resolved'"

rc=0
timeout 120 "$root/usr/bin/hvdrun" -np 2 "$bin" >"$work/run.log" 2>&1 || rc=$?
cat "$work/run.log"
[ $rc -eq 0 ] || pkg_fail "hvdrun -np 2 $bin exited with $rc"
for r in 0 1; do
  grep -qF "[$r]<stdout>: rank $r of 2: libhvd " "$work/run.log" || pkg_fail "no success line from rank $r"
done
echo "deb_consumer ($how): built against the packages, 2 ranks allreduced correctly"
