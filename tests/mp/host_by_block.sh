#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# host_by_block.sh PROGRAM [ARGS...]
# Runs PROGRAM as if the ranks (HVD_RANK, set by hvdrun) filled hosts of MP_RANKS_PER_HOST
# ranks each, in rank order: rank r reports the host name hvd-host-<r / MP_RANKS_PER_HOST>
# (HVD_HOSTNAME). The job then spans several "hosts" of one machine.
set -eu
export HVD_HOSTNAME=hvd-host-$((${HVD_RANK:?} / ${MP_RANKS_PER_HOST:?}))
exec "$@"
