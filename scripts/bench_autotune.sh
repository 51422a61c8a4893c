#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Autotune on the benchmark step: hvd_bench --many 256 (256 allreduces of 4 KiB per step, as
# scripts/bench.sh's hvd_many256_np2 case) on NP ranks with HVD_AUTOTUNE=1, REPS times. Per
# run, from rank 0's autotune log (HVD_AUTOTUNE_LOG): the points scored (a point's score is the
# better of its two counted samples, in bytes per second), the best point and its score, the
# first point whose score is within 5 % of REF_BPS (default: that run's best), and the point
# the search kept.
#
#   scripts/bench_autotune.sh                          from the defaults, 3 runs
#   START="HVD_CYCLE_TIME=2 HVD_CACHE_CAPACITY=0" scripts/bench_autotune.sh
#                                                      the search starts from another setting
#
# Environment: BUILD_DIR (default build), NP (2), REPS (3), REF_BPS (a reference score, e.g.
# the best point of another search), START (settings the ranks start from), STEPS (ops per
# sample, default 5120: 20 steps), SECONDS_PER_RUN (how long hvd_bench runs, 10; the search
# must end within it), OUT (keeps the logs; default: a temporary directory).
set -euo pipefail

HVD_ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$HVD_ROOT/$BUILD_DIR ;; esac
NP=${NP:-2}
REPS=${REPS:-3}
STEPS=${STEPS:-5120}
START=${START:-}
REF_BPS=${REF_BPS:-}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
HVDRUN=$BUILD_DIR/tools/hvdrun/hvdrun
BENCH=$BUILD_DIR/bench/hvd_bench
[ -x "$HVDRUN" ] && [ -x "$BENCH" ] || { echo "bench_autotune.sh: build $BUILD_DIR first" >&2; exit 2; }
if [ -z "${OUT:-}" ]; then
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/hvd-autotune.XXXXXX")
  trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"

# One line per run from a log: columns found by the header's names, so that any version's log
# reads the same (the parameters are every column but sample, score and state).
summarise() {
  awk -F, -v ref="$REF_BPS" '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    {
      params = ""
      for (i = 1; i <= NF; ++i)
        if (i != col["sample"] && i != col["score_bytes_per_s"] && i != col["state"])
          params = params (params == "" ? "" : " ") $i
      state = $col["state"]; score = $col["score_bytes_per_s"] + 0
    }
    state == "sample" {
      if (score > point) point = score
      if (++counted == 2) {
        ++n; scores[n] = point; at[n] = params
        if (point > best) { best = point; best_at = params }
        counted = 0; point = 0
      }
    }
    state == "final" { kept = params }
    END { for (i = 1; i <= n; ++i) if (at[i] == kept && scores[i] > kept_score) kept_score = scores[i] }
    END {
      target = 0.95 * (ref != "" ? ref : best)
      for (i = 1; i <= n && scores[i] < target; ++i) {}
      within = i <= n ? i : "none"
      printf "points %d  best %.2f GB/s at [%s]  first within 5%% of %.2f GB/s: point %s  " \
             "kept [%s] %.2f GB/s\n", n, best / 1e9, best_at, target / 0.95 / 1e9, within, kept,
             kept_score / 1e9
    }' "$1"
}

echo "# autotune on hvd_bench --many 256 -b 4K -e 4K, $NP ranks, $STEPS ops per sample, start: ${START:-defaults}"
for rep in $(seq 1 "$REPS"); do
  log=$OUT/tune.$rep.csv
  rm -f "$log" "$log".*
  # shellcheck disable=SC2086 # START is a list of VAR=value words
  env $START HVD_AUTOTUNE=1 HVD_AUTOTUNE_LOG="$log" HVD_AUTOTUNE_STEPS_PER_SAMPLE="$STEPS" \
    HVD_AUTOTUNE_WARMUP_SAMPLES=1 \
    "$HVDRUN" --no-prefix -np "$NP" "$BENCH" --many 256 -b 4K -e 4K -x none -t "$SECONDS_PER_RUN" >/dev/null
  grep -q ',final$' "$log" || { echo "run $rep: the search did not end within the run" >&2; exit 1; }
  printf 'run %d: ' "$rep"
  summarise "$log"
done
