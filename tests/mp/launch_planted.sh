#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# launch_planted.sh STYLE NP PROGRAM [ARGS...]
# launch_as.sh under a fresh TMPDIR where someone else got first to the rendezvous file's
# directory, $TMPDIR/hvd-<uid>: a directory open to everyone (owned by another user when run
# as root). The single-host rendezvous must skip it and still meet, in $TMPDIR/hvd-<uid>.1.
set -u
here=$(dirname "${BASH_SOURCE[0]}")
dir=$(mktemp -d "${TMPDIR:-/tmp}/hvd-planted.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
planted="$dir/hvd-$(id -u)"
mkdir -m 0777 "$planted" && chmod 0777 "$planted" || exit 1
[ "$(id -u)" = 0 ] && chown 65534 "$planted"
unset XDG_RUNTIME_DIR
TMPDIR=$dir "$here/launch_as.sh" "$@" || exit 1
if [ -n "$(ls -A "$planted")" ]; then
  echo "launch_planted: something was written into the planted $planted" >&2
  exit 1
fi
[ -d "$planted.1" ] || { echo "launch_planted: $planted.1 was not used" >&2; exit 1; }
echo "launch_planted: ok"
