#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# expect_run.sh EXIT_CODE PATTERN COUNT -- command...
# Runs the command; passes when it exits with EXIT_CODE and PATTERN occurs exactly COUNT times
# in its output (counted per match, not per line: a launcher that forwards several processes'
# output may join two ranks' lines into one). The output is shown either way.
want_code=$1 pattern=$2 want_count=$3
shift 4
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
count=$(printf '%s\n' "$out" | grep -o -- "$pattern" | wc -l | tr -d " ")
if [ "$code" -ne "$want_code" ]; then
  echo "expect_run: exit code $code, expected $want_code" >&2
  exit 1
fi
if [ "$count" -ne "$want_count" ]; then
  echo "expect_run: '$pattern' $count times, expected $want_count" >&2
  exit 1
fi
echo "expect_run: ok (exit $code, $count x '$pattern')"
