#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# host_by_parity.sh PROGRAM [ARGS...]
# Runs PROGRAM as if even and odd ranks (HVD_RANK, set by hvdrun) ran on two hosts: each
# reports the host name hvd-host-even or hvd-host-odd (HVD_HOSTNAME). The job then spans two
# "hosts" of one machine: no job-wide shared memory, local and cross ranks by parity.
set -eu
if [ $((${HVD_RANK:?} % 2)) -eq 0 ]; then
  export HVD_HOSTNAME=hvd-host-even
else
  export HVD_HOSTNAME=hvd-host-odd
fi
exec "$@"
