#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check_abi.sh check|update LIBHVD_SO BASELINE SOURCE_ROOT PUBLIC_HEADER_DIR...
#
# check:  compares the library's public ABI (abidw, public headers only) with the committed
#         baseline. Fails on ANY difference abidiff reports: an incompatible change (a removed
#         function, a changed struct, a changed enum value) and also an addition, so that new
#         functions are recorded on purpose together with their version node.
# update: rewrites the baseline. Only for a deliberate ABI change, once src/libhvd.map has
#         the new functions (in a new version node after a release):
#             cmake --build <build> --target hvd_abi_update
#         rewrites abi/libhvd.so.<N>.abi and debian/libhvd1.symbols (debian_symbols.sh);
#         commit both with the change, and extend tests/abi/test_struct_layout.c by hand
#         for new structs, fields and constants. An incompatible change also bumps HVD_ABI_VERSION (the SONAME).
#
# The ABI is read from DWARF, so the library must be built with -g (RelWithDebInfo or Debug);
# without it the check is skipped (exit 77).
set -euo pipefail
mode=$1 lib=$2 baseline=$3 root=$4
shift 4
header_args=()
for d in "$@"; do header_args+=(--headers-dir "$d"); done

if ! command -v abidw >/dev/null; then
  echo "check_abi: abidw is missing: apt-get install abigail-tools" >&2
  exit 1
fi
sections=$(readelf -S "$lib")
if ! grep -q '\.debug_info' <<<"$sections"; then
  echo "check_abi: $lib has no debug info (build with -g, e.g. RelWithDebInfo): skipped" >&2
  exit 77
fi

# Only what the public headers declare, without paths or line numbers, so the file depends
# neither on where the tree is checked out nor on edits that do not change the ABI.
dump_abi() {
  abidw --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed \
    --exported-interfaces-only --drop-private-types "${header_args[@]}" "$lib" |
    sed "s|path='${root%/}/|path='|"
}

case $mode in
update)
  dump_abi >"$baseline"
  echo "check_abi: wrote $baseline"
  ;;
check)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  dump_abi >"$tmp/current.abi"
  rc=0
  abidiff "$baseline" "$tmp/current.abi" >"$tmp/report" || rc=$?
  # abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change (additions
  # included), 8 incompatible change. Every bit is a failure here.
  if [ $rc -ne 0 ]; then
    cat "$tmp/report"
    what="changed"
    [ $((rc & 8)) -ne 0 ] && what="changed INCOMPATIBLY"
    [ $((rc & 3)) -ne 0 ] && what="could not be compared (abidiff error $rc)"
    echo "check_abi: the ABI of $lib $what against $baseline." >&2
    echo "check_abi: if the change is deliberate, refresh the baseline (see this script's" \
      "header comment)." >&2
    exit 1
  fi
  echo "check_abi: $(grep -c '<function-decl' "$tmp/current.abi") functions, ABI matches $baseline"
  ;;
*)
  echo "usage: check_abi.sh check|update LIB BASELINE SOURCE_ROOT HEADER_DIR..." >&2
  exit 2
  ;;
esac
