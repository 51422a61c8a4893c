#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_exports.sh LIBHVD_SO HVD_H LIBHVD_MAP
# The library exports exactly the hvd_* functions that the header declares with HVD_API and
# the version script lists, each under a version node, and its SONAME is libhvd.so.<ABI>.
set -euo pipefail
lib=$1 header=$2 map=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^HVD_[0-9.]*$' | sed 's/@.*//' | sort -u >"$tmp/exported"
# every HVD_API declaration names its function on the HVD_API line
grep -oE 'HVD_API[^(]*\bhvd_[a-z_]+\(' "$header" | grep -oE 'hvd_[a-z_]+\($' | tr -d '(' |
  sort -u >"$tmp/declared"
grep -oE '^\s+hvd_[a-z_]+;' "$map" | tr -d ' ;' | sort -u >"$tmp/listed"

fail=0
if grep -v '^hvd_' "$tmp/exported"; then
  echo "check_exports: the symbols above are exported but are not hvd_*" >&2; fail=1
fi
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "check_exports: exported symbols differ from the functions hvd.h declares" >&2; fail=1
fi
if ! diff -u "$tmp/listed" "$tmp/exported"; then
  echo "check_exports: exported symbols differ from the version script" >&2; fail=1
fi
unversioned=$(nm -D --defined-only "$lib" | awk '$3 ~ /^hvd_/ && $3 !~ /@/' || true)
if [ -n "$unversioned" ]; then
  echo "check_exports: symbols without a version node: $unversioned" >&2; fail=1
fi
abi=$(sed -n 's/^#define HVD_ABI_VERSION \([0-9]*\)$/\1/p' "$(dirname "$lib")/../include/hvd/hvd_version.h" 2>/dev/null || true)
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
if [ "$soname" != "libhvd.so.${abi:-1}" ]; then
  echo "check_exports: SONAME is '$soname', expected libhvd.so.${abi:-1}" >&2; fail=1
fi
[ $fail -eq 0 ] && echo "check_exports: $(wc -l <"$tmp/exported") hvd_* symbols, SONAME $soname: ok"
exit $fail
