#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# copy_tree.sh SOURCE_ROOT DEST: copies the files a release tarball would hold (tracked and
# new files, not what .gitignore excludes: no build directories, no .git) to DEST, so that
# package builds run on a clean tree and never write into the source tree.
source "$(dirname "$0")/common.sh"
src=$1 dest=$2
rm -rf "$dest"
mkdir -p "$dest"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Read-only listing; files deleted in the work tree but still in the index are skipped.
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf -) | tar -xf - -C "$dest"
else
  tar -C "$src" --exclude='./build*' --exclude='./.venv' --exclude-vcs -cf - . | tar -xf - -C "$dest"
fi
[ -f "$dest/CMakeLists.txt" ] || pkg_fail "copying $src to $dest failed"
