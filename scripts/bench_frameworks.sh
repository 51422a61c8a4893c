#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Synthetic training throughput on 2 ranks (CPU), hvd against each framework's own data
# parallelism, in the same run: bench/framework_synthetic.py with hvd.tensorflow and with
# tf.distribute.MultiWorkerMirroredStrategy, with hvd.jax and with jax.distributed (gloo CPU
# collectives), REPEATS rounds (default 3) each running the four in turn; prints each run's
# total img/sec and the medians.
#
#   scripts/bench_frameworks.sh HVDRUN BUILD_PYTHON_DIR TF_PYTHON JAX_PYTHON [REPEATS]
set -euo pipefail

if [ $# -lt 4 ]; then
  echo "usage: $0 HVDRUN BUILD_PYTHON_DIR TF_PYTHON JAX_PYTHON [REPEATS]" >&2
  exit 2
fi
HVDRUN=$1 TF_PY=$3 JAX_PY=$4 REPEATS=${5:-3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PYTHONPATH=$2${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 JAX_PLATFORMS=cpu
export TF_CPP_MIN_LOG_LEVEL=2 HVD_OP_TIMEOUT=${HVD_OP_TIMEOUT:-120}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

declare -A RUNS
for round in $(seq "$REPEATS"); do
  for case in tensorflow:hvd tensorflow:native jax:hvd jax:native; do
    fw=${case%%:*} backend=${case#*:}
    py=$TF_PY
    [ "$fw" = jax ] && py=$JAX_PY
    ports="$(python3 "$ROOT/scripts/free_port.py"),$(python3 "$ROOT/scripts/free_port.py")"
    log="$TMP/$fw.$backend.$round.log"
    timeout -k 10 300 "$HVDRUN" -np 2 "$py" "$ROOT/bench/framework_synthetic.py" \
      --framework "$fw" --backend "$backend" --ports "$ports" >"$log" 2>&1 || {
      cat "$log" >&2
      echo "bench_frameworks: $fw/$backend (round $round) failed" >&2
      exit 1
    }
    v=$(sed -n 's/^\[0\]<stdout>: Total img\/sec on 2 rank(s): \([0-9.]*\)$/\1/p' "$log")
    [ -n "$v" ] || { cat "$log" >&2; echo "bench_frameworks: no result from $fw/$backend" >&2; exit 1; }
    echo "round $round $fw $backend: $v img/sec"
    RUNS[$fw.$backend]+="$v "
  done
done
for key in tensorflow.hvd tensorflow.native jax.hvd jax.native; do
  median=$(printf '%s\n' ${RUNS[$key]} | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  echo "median $key: $median img/sec (runs: ${RUNS[$key]})"
done
