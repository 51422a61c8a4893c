#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Synthetic training throughput of hvd.torch against torch DDP (gloo) on one host, and against
# Horovod itself with BACKENDS="hvd ddp horovod": examples/python/torch_synthetic_benchmark.py
# under hvdrun (Horovod's under its horovodrun --gloo), REPS repetitions of each backend,
# interleaved (the order rotates every repetition so that drift in the host's load hits all
# alike), then a table of the medians of "Total img/sec" (and of the CPU time per image, all
# threads of all ranks: steadier than img/sec on a shared host) and the ratios to hvd
# (target hvd / ddp: >= 1.2).
#
#   scripts/bench_torch.sh                      2 ranks, 3 repetitions, the default cnn model
#   scripts/bench_torch.sh --model mlp          further arguments go to the benchmark
#
# Environment: BUILD_DIR (default build: its python/ and tools/hvdrun/hvdrun are used),
# PYTHON (default .venv/bin/python), NP (ranks, 2), REPS (3), BENCH_ARGS (the benchmark's
# settings, default "--batch-size 32 --num-warmup-batches 5 --num-batches-per-iter 10
# --num-iters 5"), OUT (a directory that keeps every run's log; default: a temporary one,
# removed at the end), BACKENDS (default "hvd ddp"; "horovod" needs Horovod built by
# `scripts/bench.sh --horovod` into HOROVOD_VENV, default $BUILD_DIR/horovod-venv, and PYTHON
# set to that venv's python so that every backend runs the same torch).
set -euo pipefail

HVD_ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$HVD_ROOT/$BUILD_DIR ;; esac
PYTHON=${PYTHON:-$HVD_ROOT/.venv/bin/python}
NP=${NP:-2}
REPS=${REPS:-3}
DEFAULT_ARGS="--batch-size 32 --num-warmup-batches 5 --num-batches-per-iter 10 --num-iters 5"
BENCH_ARGS=${BENCH_ARGS:-$DEFAULT_ARGS}
HVDRUN=$BUILD_DIR/tools/hvdrun/hvdrun
BACKENDS=${BACKENDS:-hvd ddp}
HOROVOD_VENV=${HOROVOD_VENV:-$BUILD_DIR/horovod-venv}
BENCH=$HVD_ROOT/examples/python/torch_synthetic_benchmark.py

case "${1:-}" in
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
esac
die() { echo "bench_torch: $*" >&2; exit 2; }
[ -x "$HVDRUN" ] || die "no hvdrun at $HVDRUN (build first, or set BUILD_DIR)"
[ -f "$BUILD_DIR/python/hvd/__init__.py" ] || die "no hvd package in $BUILD_DIR/python"
[ -x "$PYTHON" ] || die "no python at $PYTHON (set PYTHON)"
"$PYTHON" -c 'import torch' 2>/dev/null || die "$PYTHON cannot import torch"
[[ "$NP" =~ ^[1-9][0-9]*$ ]] || die "NP must be a positive integer, got '$NP'"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, got '$REPS'"
read -r -a BACKEND_LIST <<<"$BACKENDS"
for b in "${BACKEND_LIST[@]}"; do
  case "$b" in
    hvd | ddp | horovod) ;;
    *) die "unknown backend '$b' in BACKENDS (hvd ddp horovod)" ;;
  esac
done
[[ " $BACKENDS " == *" hvd "* ]] || die "BACKENDS must include hvd (the ratios are to it)"
if [[ " $BACKENDS " == *" horovod "* ]]; then
  [ -x "$HOROVOD_VENV/bin/horovodrun" ] ||
    die "no Horovod at $HOROVOD_VENV (scripts/bench.sh --horovod builds it; or set HOROVOD_VENV)"
  "$PYTHON" -c 'import horovod.torch' 2>/dev/null ||
    die "$PYTHON cannot import horovod.torch (set PYTHON=$HOROVOD_VENV/bin/python)"
fi

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  echo "== logs in $OUT"
else
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
fi
export PYTHONPATH=$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1

free_port() {
  "$PYTHON" "$HVD_ROOT/scripts/free_port.py"
}

# run_one BACKEND REP [ARGS...]: one benchmark run, its log in $OUT; prints its total img/sec
# and CPU milliseconds per image. Fails when the run fails or prints no total.
run_one() {
  local backend=$1 rep=$2 log
  shift 2
  log=$OUT/$backend.$rep.log
  local launch=("$HVDRUN" -np "$NP")
  [ "$backend" = horovod ] && launch=("$HOROVOD_VENV/bin/horovodrun" -np "$NP" --gloo)
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of words
  "${launch[@]}" "$PYTHON" "$BENCH" --backend "$backend" --ddp-port "$(free_port)" \
    $BENCH_ARGS "$@" >"$log" 2>&1 || return 1
  local total cpu
  total=$(sed -n 's/^\[0\]<stdout>: \?Total img\/sec on [0-9]* rank(s): \([0-9.]*\) +-.*/\1/p' "$log")
  cpu=$(sed -n 's/^\[0\]<stdout>: \?CPU time: \([0-9.]*\) ms per image.*/\1/p' "$log")
  [ -n "$total" ] && [ -n "$cpu" ] || return 1
  echo "$total $cpu"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== hvd.torch vs ${BACKENDS// /, }: $NP ranks, $REPS repetitions, $BENCH_ARGS $*"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A RUNS CPUS
for ((rep = 1; rep <= REPS; rep++)); do
  # rotate the order by one backend per repetition
  n=${#BACKEND_LIST[@]}
  order=()
  for ((k = 0; k < n; k++)); do order+=("${BACKEND_LIST[$(((k + rep - 1) % n))]}"); done
  for backend in "${order[@]}"; do
    if ! r=$(run_one "$backend" "$rep" "$@"); then
      cat "$OUT/$backend.$rep.log" >&2
      echo "bench_torch: the $backend run $rep failed or printed no totals (log above)" >&2
      exit 1
    fi
    read -r v c <<<"$r"
    echo "   rep $rep $backend: $v img/sec, $c CPU ms per image"
    RUNS[$backend]="${RUNS[$backend]:-} $v"
    CPUS[$backend]="${CPUS[$backend]:-} $c"
  done
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "| backend | runs (total img/sec) | median img/sec | median CPU ms per image |"
echo "|---|---|---:|---:|"
declare -A MED
for backend in "${BACKEND_LIST[@]}"; do
  # shellcheck disable=SC2086  # the runs are a list of words
  MED[$backend]=$(median ${RUNS[$backend]})
  # shellcheck disable=SC2086
  printf '| %s |%s | %s | %s |\n' "$backend" "${RUNS[$backend]}" "${MED[$backend]}" \
    "$(median ${CPUS[$backend]})"
done
echo
for backend in "${BACKEND_LIST[@]}"; do
  [ "$backend" = hvd ] && continue
  awk -v h="${MED[hvd]}" -v d="${MED[$backend]}" -v b="$backend" 'BEGIN {
    r = h / d
    printf "ratio hvd / %s (median img/sec): %.3f", b, r
    if (b == "ddp") printf " (target >= 1.2: %s)", (r >= 1.2 ? "met" : "missed")
    printf "\n" }'
done
