#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# abuse_rendezvous.sh PROGRAM [ARGS...]
# Runs PROGRAM as a rank of an hvdrun job with at most 256 file descriptors; on rank 0 a
# helper first starts hammering the job's rendezvous port (HVD_RENDEZVOUS_ADDR/PORT, set by
# hvdrun) with 1,000 abusive connections, which the job must survive.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "${HVD_RANK:-}" = 0 ]; then
  python3 "$here/abuse_rendezvous.py" "$HVD_RENDEZVOUS_ADDR" "$HVD_RENDEZVOUS_PORT" 1000 60 &
fi
ulimit -n 256
exec "$@"
