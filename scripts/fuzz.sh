#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes every target of tests/fuzz with libFuzzer (clang, -fsanitize=fuzzer,address,undefined):
#   scripts/fuzz.sh [SECONDS]     SECONDS per target, default 600
# Installs clang-14 and libclang-rt-14-dev when missing (Debian 12), builds the targets in their
# own build directory (FUZZ_BUILD_DIR, default build-fuzz), runs each over a copy of its seed
# corpus (tests/fuzz/corpus/<target>) and prints a table: executions, executions per second,
# coverage (libFuzzer's cov: and ft:), inputs added to the corpus, crashes. Crashing inputs
# stay in FUZZ_BUILD_DIR/runs/<target>/; add them to the seed corpus with the fix.
set -euo pipefail
source "$(dirname "$0")/common.sh"

SECONDS_PER_TARGET=${1:-600}
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-$HVD_ROOT/build-fuzz}
# Optional installs: only this script needs them (CI runs the targets with gcc, label fuzz).
HVD_APT_PACKAGES+=(clang-14 libclang-rt-14-dev)
hvd_install_missing

cmake=$(hvd_cmake)
hvd_log "configuring in $FUZZ_BUILD_DIR (clang-14, libFuzzer)"
CC=clang-14 CXX=clang++-14 "$cmake" -S "$HVD_ROOT" -B "$FUZZ_BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHVD_FUZZ_LIBFUZZER=ON -DHVD_BUILD_PYTHON=OFF >/dev/null
hvd_log "building the fuzz targets with $JOBS jobs"
"$cmake" --build "$FUZZ_BUILD_DIR" -j "$JOBS" --target hvd_fuzz_targets >/dev/null

rows=()
failed=0
for src in "$HVD_ROOT"/tests/fuzz/fuzz_*.cc; do
  target=$(basename "$src" .cc)
  name=${target#fuzz_}
  run="$FUZZ_BUILD_DIR/runs/$name"
  rm -rf "$run"
  mkdir -p "$run/corpus"
  cp "$HVD_ROOT/tests/fuzz/corpus/$name"/* "$run/corpus/"
  seeds=$(ls "$run/corpus" | wc -l)
  hvd_log "fuzzing $name for $SECONDS_PER_TARGET s ($seeds seeds)"
  rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$HVD_ROOT/tests/fuzz/lsan.supp} \
    "$FUZZ_BUILD_DIR/tests/$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=60 \
    -print_final_stats=1 -artifact_prefix="$run/" "$run/corpus" >"$run/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$run/log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$run/log" | grep -E 'cov: ' | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(ls "$run/corpus" | wc -l)
  crashes=$(find "$run" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' \
    -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="rc=$rc"; fi
  [ "$crashes" = 0 ] || failed=1
  rows+=("$(printf '%-14s %12s %9s %7s %7s %8s %8s' "$name" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "$((corpus - seeds))" "$crashes")")
done

printf '\n%-14s %12s %9s %7s %7s %8s %8s\n' target execs exec/s cov ft "new" crashes
printf '%s\n' "${rows[@]}"
if [ "$failed" -ne 0 ]; then
  echo "fuzz: failures; inputs and logs in $FUZZ_BUILD_DIR/runs/<target>/" >&2
  exit 1
fi
