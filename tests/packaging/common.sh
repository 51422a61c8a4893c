# SPDX-License-Identifier: Apache-2.0
# Shared by the packaging test scripts. Sourced, not run.
set -euo pipefail

pkg_fail() {
  echo "packaging: $*" >&2
  exit 1
}

# pkg_require_file LISTING PATH: PATH is a line of LISTING (a file of package paths).
pkg_require_file() {
  grep -qxF "$2" "$1" || pkg_fail "$(basename "$1" .list) lacks $2"
}

# Runs a long, verbose step with its output in LOG; prints the log's tail if it fails.
pkg_logged() {
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    pkg_fail "'$*' failed (whole log: $log)"
  fi
}
