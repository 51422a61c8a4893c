#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# env_on_rank.sh RANK NAME=VALUE PROGRAM [ARGS...]
# Runs PROGRAM with NAME=VALUE added on rank RANK only (HVD_RANK, set by hvdrun): a job whose
# ranks disagree on a setting must still agree on how they run every collective.
set -eu
rank=$1 setting=$2
shift 2
if [ "${HVD_RANK:-}" = "$rank" ]; then export "${setting?}"; fi
exec "$@"
