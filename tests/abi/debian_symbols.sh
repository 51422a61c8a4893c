#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# debian_symbols.sh check|update LIBHVD_SO SYMBOLS_FILE VERSION
#
# check:  debian/libhvd1.symbols lists exactly the symbols the built library exports, as
#         dpkg-gensymbols -c4 checks it while building the Debian package (found here without
#         building the package).
# update: rewrites the file from the built library, keeping each known symbol's version and
#         tagging new ones with VERSION (the upstream release that introduces them). Through
#         `cmake --build <build> --target hvd_abi_update`, for deliberate changes only (see
#         check_abi.sh).
set -euo pipefail
mode=$1 lib=$2 symbols=$3 version=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# dpkg-gensymbols reads debian/ files of the current directory when present: run it elsewhere.
gensymbols() { (cd "$tmp" && dpkg-gensymbols -plibhvd1 -v"$version" -e"$lib" -I"$symbols" "$@"); }

case $mode in
check)
  if ! gensymbols -c4 -O"$tmp/new"; then
    echo "debian_symbols: $symbols does not match the symbols $lib exports (diff above);" \
      "record a deliberate change with the hvd_abi_update target" >&2
    exit 1
  fi
  echo "debian_symbols: $(grep -c '^ ' "$symbols") symbols, as exported"
  ;;
update)
  gensymbols -q -O"$tmp/new"
  cp "$tmp/new" "$symbols"
  echo "debian_symbols: wrote $symbols ($(grep -c '^ ' "$symbols") symbols)"
  ;;
*)
  echo "usage: debian_symbols.sh check|update LIB SYMBOLS_FILE VERSION" >&2
  exit 2
  ;;
esac
