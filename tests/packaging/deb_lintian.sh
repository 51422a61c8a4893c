#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_lintian.sh OUT: lintian finds no error in the packages deb_build.sh built (warnings are
# shown, not fatal).
source "$(dirname "$0")/common.sh"
out=$1
changes=("$out"/*.changes)
[ -f "${changes[0]}" ] || pkg_fail "no .changes file in $out"
lintian --fail-on error --tag-display-limit 0 "${changes[@]}" || pkg_fail "lintian reported errors"
echo "deb_lintian: no errors"
