#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_build.sh SOURCE_ROOT OUT VERSION [NVCC NCCL_ROOT]: builds the Debian packages from a copy
# of the tree in OUT (dpkg-buildpackage writes the .deb files next to the tree it builds, i.e.
# into OUT) and unpacks them with dpkg -x into OUT/root, a scratch root the other tests use.
# With NVCC and NCCL_ROOT, through the build profile pkg.libhvd.gpu: libhvd-nccl1 as well.
source "$(dirname "$0")/common.sh"
src=$1 out=$2 version=$3 nvcc=${4:-} nccl_root=${5:-}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
tree=$out/libhvd-$version
bash "$(dirname "$0")/copy_tree.sh" "$src" "$tree"

changelog_version=$(cd "$tree" && dpkg-parsechangelog -S Version)
[ "${changelog_version%-*}" = "$version" ] ||
  pkg_fail "debian/changelog is at $changelog_version, the project at $version: add an entry"

# nocheck: this suite runs the unit tests itself; noautodbgsym: no -dbgsym packages.
export DEB_BUILD_OPTIONS="nocheck noautodbgsym"
profile=() expect="libhvd1, libhvd-dev, libhvd-tools, python3-hvd, libhvd-java"
if [ -n "$nvcc" ]; then
  export CUDACXX=$nvcc HVD_NCCL_ROOT=$nccl_root
  profile=(-Ppkg.libhvd.gpu) expect="$expect, libhvd-nccl1"
fi
(cd "$tree" && pkg_logged "$out/build.log" dpkg-buildpackage -us -uc -b -j2 "${profile[@]}")

debs=("$out"/*.deb)
count=$(($(tr -cd , <<<"$expect" | wc -c) + 1))
[ ${#debs[@]} -eq "$count" ] || pkg_fail "expected $count packages ($expect), got: ${debs[*]##*/}"
for deb in "${debs[@]}"; do
  dpkg -x "$deb" "$out/root"
done
echo "deb_build: built and unpacked ${debs[*]##*/}"
