#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_build.sh SOURCE_ROOT OUT VERSION: builds the Debian packages from a copy of the tree in
# OUT (dpkg-buildpackage writes the .deb files next to the tree it builds, i.e. into OUT) and
# unpacks them with dpkg -x into OUT/root, a scratch root the other tests use.
source "$(dirname "$0")/common.sh"
src=$1 out=$2 version=$3
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
(cd "$tree" && pkg_logged "$out/build.log" dpkg-buildpackage -us -uc -b -j2)

debs=("$out"/*.deb)
[ ${#debs[@]} -eq 5 ] || pkg_fail "expected 5 packages (libhvd1, libhvd-dev, libhvd-tools, python3-hvd, libhvd-java), got: ${debs[*]##*/}"
for deb in "${debs[@]}"; do
  dpkg -x "$deb" "$out/root"
done
echo "deb_build: built and unpacked ${debs[*]##*/}"
