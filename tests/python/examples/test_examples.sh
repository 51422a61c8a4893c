#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Python examples under hvdrun and checks what they print:
#  - examples/python/torch_digits_train.py on 1, 2 and 4 ranks (system python: it has
#    scikit-learn): every test accuracy >= 0.93 and within 0.01 of the 1-rank one, and the
#    final training loss within 0.005 of the 1-rank one (the fixed global batch makes every
#    rank count train the same model);
#  - examples/python/torch_synthetic_benchmark.py, tiny settings, on 2 ranks with each backend
#    (hvd and ddp, venv python): the "Total img/sec on 2 rank(s):" line.
#
#   test_examples.sh HVDRUN BUILD_PYTHON_DIR VENV_PYTHON SYSTEM_PYTHON
#
# Exit status: 0 passed, 1 failed, 2 usage error, 77 skipped (an interpreter lacks torch, or
# the system one lacks scikit-learn).
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 HVDRUN BUILD_PYTHON_DIR VENV_PYTHON SYSTEM_PYTHON" >&2
  exit 2
fi
HVDRUN=$1
PYDIR=$2
VENV_PY=$3
SYS_PY=$4
EXAMPLES=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../examples/python" && pwd)

for f in "$HVDRUN" "$VENV_PY" "$SYS_PY"; do
  [ -x "$f" ] || { echo "test_examples: $f is not an executable" >&2; exit 2; }
done
[ -f "$PYDIR/hvd/__init__.py" ] || { echo "test_examples: no hvd package in $PYDIR" >&2; exit 2; }

export PYTHONPATH=$PYDIR${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
export HVD_OP_TIMEOUT=${HVD_OP_TIMEOUT:-60}
export HVD_START_TIMEOUT=${HVD_START_TIMEOUT:-60}

if ! "$SYS_PY" -c 'import torch, sklearn' 2>/dev/null; then
  echo "test_examples: SKIPPED: $SYS_PY lacks torch or scikit-learn" >&2
  exit 77
fi
if ! "$VENV_PY" -c 'import torch' 2>/dev/null; then
  echo "test_examples: SKIPPED: $VENV_PY lacks torch" >&2
  exit 77
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() {
  echo "test_examples: FAILED: $*" >&2
  exit 1
}

# run NAME CMD...: runs CMD (bounded to 120 s) with its output in $TMP/NAME.log, shown on failure.
run() {
  local name=$1
  shift
  echo "== $name: $*"
  local rc=0
  timeout -k 10 120 "$@" >"$TMP/$name.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    cat "$TMP/$name.log" >&2
    fail "$name exited with status $rc"
  fi
}

# ---------------------------------------------------------------- digits, 1 / 2 / 4 ranks
# value KEY LOG: the number rank 0 printed as KEY=<number>; fails unless exactly one line has it.
value() {
  local n
  n=$(grep -c "^\[0\]<stdout>: $1=" "$2" || true)
  if [ "$n" -ne 1 ]; then
    cat "$2" >&2
    fail "$(basename "$2" .log) printed $n '$1=' lines from rank 0, expected 1"
  fi
  sed -n "s/^\[0\]<stdout>: $1=\([0-9.]*\)\$/\1/p" "$2"
}
declare -A ACC LOSS
for np in 1 2 4; do
  run "digits_np$np" "$HVDRUN" -np "$np" "$SYS_PY" "$EXAMPLES/torch_digits_train.py"
  ACC[$np]=$(value test_accuracy "$TMP/digits_np$np.log")
  LOSS[$np]=$(value final_train_loss "$TMP/digits_np$np.log")
  [ -n "${ACC[$np]}" ] && [ -n "${LOSS[$np]}" ] || fail "digits on $np rank(s): unparsable output"
  echo "   $np rank(s): test_accuracy=${ACC[$np]} final_train_loss=${LOSS[$np]}"
done
# within A B TOL: |A - B| <= TOL
within() {
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t + 1e-9) }'
}
for np in 1 2 4; do
  awk -v a="${ACC[$np]}" 'BEGIN { exit !(a >= 0.93) }' ||
    fail "digits on $np rank(s): test_accuracy ${ACC[$np]} < 0.93"
  within "${ACC[$np]}" "${ACC[1]}" 0.01 ||
    fail "digits on $np rank(s): test_accuracy ${ACC[$np]} is not within 0.01 of the 1-rank" \
      "${ACC[1]}"
  # The same training run on any number of ranks: the losses agree up to float rounding.
  within "${LOSS[$np]}" "${LOSS[1]}" 0.005 ||
    fail "digits on $np rank(s): final_train_loss ${LOSS[$np]} is not within 0.005 of the" \
      "1-rank ${LOSS[1]} (gradients not averaged over the global batch?)"
done

# ---------------------------------------------------------------- synthetic benchmark, 2 ranks
free_port() {
  "$SYS_PY" "$EXAMPLES/../../scripts/free_port.py"
}
for backend in hvd ddp; do
  run "synthetic_$backend" "$HVDRUN" -np 2 "$VENV_PY" "$EXAMPLES/torch_synthetic_benchmark.py" \
    --backend "$backend" --ddp-port "$(free_port)" --num-warmup-batches 1 --num-iters 2 \
    --num-batches-per-iter 2 --batch-size 8
  grep -E '^\[0\]<stdout>: Total img/sec on 2 rank\(s\): [0-9]+(\.[0-9]+)? \+-[0-9]+(\.[0-9]+)?$' \
    "$TMP/synthetic_$backend.log" || {
    cat "$TMP/synthetic_$backend.log" >&2
    fail "synthetic benchmark ($backend) printed no 'Total img/sec on 2 rank(s)' line"
  }
done
echo "test_examples: PASSED"
