#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rpm_build.sh SOURCE_ROOT OUT VERSION [NVCC NCCL_ROOT]: builds the RPMs of rpm/libhvd.spec
# from a source tarball of the tree, in OUT/rpmbuild; with NVCC and NCCL_ROOT --with gpu (the
# RPM libhvd-nccl too). --nodeps: the build dependencies are Debian packages on this machine,
# which rpm's database does not know.
source "$(dirname "$0")/common.sh"
src=$1 out=$2 version=$3 nvcc=${4:-} nccl_root=${5:-}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
top=$out/rpmbuild
mkdir -p "$top/SOURCES"

spec_version=$(sed -n 's/^Version:[[:space:]]*//p' "$src/rpm/libhvd.spec")
[ "$spec_version" = "$version" ] ||
  pkg_fail "rpm/libhvd.spec is at $spec_version, the project at $version"

bash "$(dirname "$0")/copy_tree.sh" "$src" "$out/libhvd-$version"
tar -C "$out" -czf "$top/SOURCES/libhvd-$version.tar.gz" "libhvd-$version"
gpu=()
if [ -n "$nvcc" ]; then
  export CUDACXX=$nvcc
  gpu=(--with gpu --define "hvd_nccl_root $nccl_root")
fi
pkg_logged "$out/build.log" rpmbuild -bb --nodeps --define "_topdir $top" \
  --define "_smp_mflags -j2" "${gpu[@]}" "$src/rpm/libhvd.spec"
ls "$top"/RPMS/*/*.rpm
