#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# spdx.sh [--fix] [ROOT]: every source file the repository tracks (C, C++, Python, shell,
# CMake, Java) names its license in an SPDX line within its first three lines. Without --fix,
# lists the files that do not and fails; with --fix, adds the line (after a shebang, in the
# file's own comment syntax).
set -eu
fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi
root=${1:-$(dirname "$0")/../..}
cd "$root"
tag="SPDX-License-Identifier: Apache-2.0"
missing=0
for f in $(git ls-files '*.c' '*.cc' '*.h' '*.py' '*.sh' '*.cmake' '*.java' '*.jl' \
             'CMakeLists.txt' '*/CMakeLists.txt'); do
  [ -f "$f" ] || continue
  head -n 3 "$f" | grep -q "SPDX-License-Identifier:" && continue
  if [ "$fix" -eq 0 ]; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
    continue
  fi
  case "$f" in
    *.c | include/*.h) line="/* $tag */" ;;
    *.cc | *.h | *.java) line="// $tag" ;;
    *.jl | *.py | *.sh | *.cmake | *CMakeLists.txt) line="# $tag" ;;
  esac
  if head -n 1 "$f" | grep -q '^#!'; then
    { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } > "$f.spdx"
  else
    { echo "$line"; cat "$f"; } > "$f.spdx"
  fi
  chmod --reference="$f" "$f.spdx"
  mv "$f.spdx" "$f"
done
if [ "$missing" -ne 0 ]; then
  echo "spdx: $missing file(s) without '$tag' (tests/repo/spdx.sh --fix adds it)" >&2
  exit 1
fi
echo "spdx: ok"
