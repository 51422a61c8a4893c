#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# launch_intruder.sh INTRUDER PROGRAM [ARGS...]
# A torchrun-style launch of 2 ranks on this host (MASTER_ADDR/MASTER_PORT, LOCAL_WORLD_SIZE
# = WORLD_SIZE, a known run id) without HVD_SECRET, attacked as the audit described: once
# rank 0 is up, INTRUDER computes the secret derivable from the run id and address and tries
# to join rank 0's rendezvous server as rank 1. Passes ("launch_intruder: ok") when the
# server refuses it and then the real rank 1 joins and both ranks exit 0, within 90 s.
set -u
intruder=$1
shift
unset HVD_RANK HVD_SIZE HVD_RENDEZVOUS_ADDR HVD_RENDEZVOUS_PORT HVD_SECRET HVD_JOB_ID \
      HVD_ALLOW_UNAUTHENTICATED
port=$(python3 "$(dirname "${BASH_SOURCE[0]}")/../../scripts/free_port.py")
run="intruder-$$-$RANDOM"
rank() {
  local r=$1
  shift
  env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port TORCHELASTIC_RUN_ID=$run timeout 90 "$@"
}
rank 0 "$@" &
r0=$!
timeout 40 "$intruder" 127.0.0.1 $((port + 1)) "$run" 2
verdict=$?
rank 1 "$@" &
r1=$!
status=0
wait $r0 || { echo "launch_intruder: rank 0 failed" >&2; status=1; }
wait $r1 || { echo "launch_intruder: rank 1 failed" >&2; status=1; }
if [ $verdict -ne 0 ]; then
  echo "launch_intruder: the intruder was not refused (exit $verdict)" >&2
  status=1
fi
[ $status -eq 0 ] && echo "launch_intruder: ok"
exit $status
