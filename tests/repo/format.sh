#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# format.sh [ROOT]: every C and C++ file the repository tracks is formatted as .clang-format
# says (clang-format --dry-run -Werror); lists the ones that are not. Skipped (exit 77) where
# clang-format is missing.
set -eu
root=${1:-$(dirname "$0")/../..}
cd "$root"
command -v clang-format >/dev/null 2>&1 || { echo "format: no clang-format"; exit 77; }
git ls-files '*.c' '*.cc' '*.h' | xargs clang-format --dry-run -Werror
echo "format: ok"
