#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# example_losses.sh NP STEPS -- command...: runs examples/java/LinearModel.java under hvdrun
# (the command); passes when it exits 0, every rank printed STEPS loss lines, all ranks' lines
# are identical, and the last loss is below a hundredth of the first.
np=$1 steps=$2
shift 3
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
fail() {
  echo "example_losses: $*" >&2
  exit 1
}
[ "$code" -eq 0 ] || fail "exit code $code"
losses() { printf '%s\n' "$out" | sed -n "s/^\[$1\]<stdout>: \(step [0-9]* loss .*\)$/\1/p"; }
first=$(losses 0)
[ "$(printf '%s\n' "$first" | grep -c loss)" -eq "$steps" ] || fail "rank 0 printed no $steps losses"
r=1
while [ "$r" -lt "$np" ]; do
  [ "$(losses "$r")" = "$first" ] || fail "rank $r's losses differ from rank 0's"
  r=$((r + 1))
done
printf '%s\n' "$first" | awk 'NR == 1 { a = $4 } END { if (!($4 < a / 100)) { print "example_losses: loss went from " a " to " $4 > "/dev/stderr"; exit 1 } }' || exit 1
echo "example_losses: ok ($np ranks, $steps identical losses, $(printf '%s\n' "$first" | head -1 | cut -d' ' -f4) -> $(printf '%s\n' "$first" | tail -1 | cut -d' ' -f4))"
