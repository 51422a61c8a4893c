#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs examples/python/jax_digits.py under hvdrun on 1, 2 and 4 ranks and checks what rank 0
# prints: every test accuracy >= 0.93 and within 0.01 of the 1-rank one, and the final
# training loss within 0.005 of the 1-rank one (the fixed global batch makes every rank count
# train the same model). HVD_DIGITS_EXAMPLE names another example printing the same lines
# (keras_digits.py; tensorflow_digits.py, run on a Python with TensorFlow), HVD_DIGITS_RANKS
# other rank counts (1 first).
#
#   test_digits.sh HVDRUN BUILD_PYTHON_DIR PYTHON
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 HVDRUN BUILD_PYTHON_DIR PYTHON" >&2
  exit 2
fi
HVDRUN=$1
export PYTHONPATH=$2${PYTHONPATH:+:$PYTHONPATH}
PY=$3
EXAMPLES=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../examples/python" && pwd)
EXAMPLE=$EXAMPLES/${HVD_DIGITS_EXAMPLE:-jax_digits.py}
export PYTHONDONTWRITEBYTECODE=1 JAX_PLATFORMS=cpu
export HVD_OP_TIMEOUT=${HVD_OP_TIMEOUT:-60}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() {
  echo "test_digits: FAILED: $*" >&2
  exit 1
}
# value KEY LOG: the number rank 0 printed as KEY=<number>, exactly once.
value() {
  [ "$(grep -c "^\[0\]<stdout>: $1=" "$2" || true)" -eq 1 ] || {
    cat "$2" >&2
    fail "$(basename "$2" .log) did not print one '$1=' line from rank 0"
  }
  sed -n "s/^\[0\]<stdout>: $1=\([0-9.]*\)\$/\1/p" "$2"
}
# within A B TOL: |A - B| <= TOL
within() {
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t + 1e-9) }'
}

declare -A ACC LOSS
read -r -a RANKS <<<"${HVD_DIGITS_RANKS:-1 2 4}"
for np in "${RANKS[@]}"; do
  log="$TMP/np$np.log"
  timeout -k 10 120 "$HVDRUN" -np "$np" "$PY" "$EXAMPLE" >"$log" 2>&1 || {
    cat "$log" >&2
    fail "$(basename "$EXAMPLE") on $np rank(s) failed"
  }
  ACC[$np]=$(value test_accuracy "$log")
  LOSS[$np]=$(value final_train_loss "$log")
  echo "$np rank(s): test_accuracy=${ACC[$np]} final_train_loss=${LOSS[$np]}"
  awk -v a="${ACC[$np]}" 'BEGIN { exit !(a >= 0.93) }' ||
    fail "$np rank(s): test_accuracy ${ACC[$np]} < 0.93"
  within "${ACC[$np]}" "${ACC[1]}" 0.01 ||
    fail "$np rank(s): test_accuracy ${ACC[$np]} is not within 0.01 of the 1-rank ${ACC[1]}"
  within "${LOSS[$np]}" "${LOSS[1]}" 0.005 ||
    fail "$np rank(s): final_train_loss ${LOSS[$np]} is not within 0.005 of the 1-rank" \
      "${LOSS[1]} (gradients not averaged over the global batch?)"
done
echo "test_digits: PASSED"
