#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Autotune on a benchmark step: hvd_bench STEP (default --many 256 -b 4K -e 4K: 256 allreduces
# of 4 KiB per step, as scripts/bench.sh's hvd_many256_np2 case) on NP ranks with
# HVD_AUTOTUNE=1, REPS times per build. With several builds (BUILDS, e.g. a build of another
# search), each repetition runs every build in turn, so that load on the machine falls on all
# alike. Per run, from rank 0's autotune log (HVD_AUTOTUNE_LOG): the points scored (a point's
# score is the better of its two counted samples, in bytes per second), the best point and its
# score, the first point whose score is within 5 % of the reference and the sample it ended
# at (warm-up samples counted), and the point the search kept. The reference is REF_BPS, else
# the median over the runs of the first build of each run's best score. Then per build the
# medians of both counts. With VERIFY=R, every kept point then runs R more times at fixed
# settings (autotune off), all points in turn each round, and each gets its median busbw and
# its ratio to the best median among the grid searches' kept points (else all kept points).
#
#   scripts/bench_autotune.sh                          from the defaults, 3 runs
#   SEARCHES="grid bayesian" REPS=5 LOCK=/tmp/hvd-heavy.lock VERIFY=3 scripts/bench_autotune.sh
#                                                      both searches alternated, each run
#                                                      holding the lock (released between),
#                                                      then the kept points checked
#   STEP="--many 64 -b 4M -e 4M" scripts/bench_autotune.sh    another step
#   FROM=0,5,0 scripts/bench_autotune.sh              the search starts from fusion 0, cycle
#                                                      time 5 ms, cache off (not held)
#
# Environment: BUILD_DIR (default build) or BUILDS (build directories, space separated),
# SEARCHES (HVD_AUTOTUNE_SEARCH values, space separated, default bayesian; every build runs
# each), VERIFY (0: no check of the kept points), NP
# (2), REPS (3), REF_BPS (a reference score), START (settings the ranks run with; settings set
# there are held by the search, as any set explicitly), FROM (BYTES,MS,ENTRIES: fusion
# threshold, cycle time and cache capacity the search starts from, set at run time through
# hvd_bench --autotune-from so that they are searched), STEP (hvd_bench's arguments), STEPS
# (ops per sample, default 5120), WARMUP (HVD_AUTOTUNE_WARMUP_SAMPLES, 1), SECONDS_PER_RUN (how
# long hvd_bench runs, 10; the search must end within it), LOCK (a file each run holds with
# flock), OUT (keeps the logs; default: a temporary directory).
set -euo pipefail

HVD_ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILDS=${BUILDS:-${BUILD_DIR:-build}}
NP=${NP:-2}
REPS=${REPS:-3}
STEPS=${STEPS:-5120}
STEP=${STEP:---many 256 -b 4K -e 4K}
WARMUP=${WARMUP:-1}
START=${START:-}
REF_BPS=${REF_BPS:-}
LOCK=${LOCK:-}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
SEARCHES=${SEARCHES:-bayesian}
VERIFY=${VERIFY:-0}
FROM=${FROM:-}
# With FROM, hvd_bench turns autotune on itself once the start point is set.
tune=(HVD_AUTOTUNE=1)
from=()
[ -z "$FROM" ] || { tune=(); from=(--autotune-from "$FROM"); }
# The variants run: every build with every search.
builds=()
searches=()
for b in $BUILDS; do
  case "$b" in /*) ;; *) b=$HVD_ROOT/$b ;; esac
  [ -x "$b/tools/hvdrun/hvdrun" ] && [ -x "$b/bench/hvd_bench" ] ||
    { echo "bench_autotune.sh: build $b first" >&2; exit 2; }
  for s in $SEARCHES; do
    case "$s" in bayesian | grid) ;; *) echo "bench_autotune.sh: unknown search $s" >&2; exit 2 ;; esac
    builds+=("$b")
    searches+=("$s")
  done
done
variant_name() {
  local name=${builds[$1]#"$HVD_ROOT"/}
  [ "$SEARCHES" = bayesian ] || name="$name:${searches[$1]}"
  echo "$name"
}
if [ -z "${OUT:-}" ]; then
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/hvd-autotune.XXXXXX")
  trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"

# One line per log: "points best best_params within_point within_sample kept kept_score",
# columns found by the header's names, so that any version's log reads the same (the
# parameters are every column but sample, score and state).
summarise() {
  awk -F, -v ref="$2" '
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
        ++n; scores[n] = point; at[n] = params; ended[n] = $col["sample"]
        if (point > best) { best = point; best_at = params }
        counted = 0; point = 0
      }
    }
    state == "final" { kept = params }
    END { for (i = 1; i <= n; ++i) if (at[i] == kept && scores[i] > kept_score) kept_score = scores[i] }
    END {
      target = 0.95 * (ref != "" ? ref : best)
      for (i = 1; i <= n && scores[i] < target; ++i) {}
      gsub(/ /, "_", best_at); gsub(/ /, "_", kept); if (kept == "") kept = "none"
      printf "%d %.0f %s %s %s %s %.0f\n", n, best, best_at, i <= n ? i : "none",
             i <= n ? ended[i] : "none", kept, kept_score
    }' "$1"
}

# The median of the numbers on stdin, where "none" (never within 5 %) ranks above them all.
median() {
  sed 's/^none$/1e18/' | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    if (NR == 0 || m >= 1e18) print "none"; else print m }'
}

echo "# autotune on hvd_bench $STEP, $NP ranks, $STEPS ops per sample, start: ${START:-defaults}${FROM:+, from $FROM}"
for rep in $(seq 1 "$REPS"); do
  for k in "${!builds[@]}"; do
    b=${builds[$k]}
    log=$OUT/tune.$k.$rep.csv
    rm -f "$log" "$log".*
    # shellcheck disable=SC2086 # START and STEP are lists of words
    ${LOCK:+flock "$LOCK"} env $START "${tune[@]}" HVD_AUTOTUNE_SEARCH="${searches[$k]}" \
      HVD_AUTOTUNE_LOG="$log" \
      HVD_AUTOTUNE_STEPS_PER_SAMPLE="$STEPS" HVD_AUTOTUNE_WARMUP_SAMPLES="$WARMUP" \
      "$b/tools/hvdrun/hvdrun" --no-prefix -np "$NP" "$b/bench/hvd_bench" $STEP -x none \
      -t "$SECONDS_PER_RUN" "${from[@]}" >/dev/null
    # An unfinished search still counts (its points so far); it keeps no point ("none").
    grep -q ',final$' "$log" ||
      echo "$(variant_name "$k") run $rep: the search did not end within the run (raise SECONDS_PER_RUN)" >&2
  done
done

ref=$REF_BPS
if [ -z "$ref" ]; then
  ref=$(for rep in $(seq 1 "$REPS"); do summarise "$OUT/tune.0.$rep.csv" ""; done | awk '{ print $2 }' | median)
fi
printf '# reference: %.3f GB/s (%s); target: within 5 %%\n' "$(awk -v r="$ref" 'BEGIN { print r / 1e9 }')" \
  "${REF_BPS:+REF_BPS}${REF_BPS:-median best of $(variant_name 0)}"
for k in "${!builds[@]}"; do
  name=$(variant_name "$k")
  for rep in $(seq 1 "$REPS"); do
    read -r n best best_at point sample kept kept_score < <(summarise "$OUT/tune.$k.$rep.csv" "$ref")
    printf '%s run %d: points %d  best %.3f GB/s at [%s]  within 5%%: point %s (sample %s)  kept [%s] %.3f GB/s\n' \
      "$name" "$rep" "$n" "$(awk -v v="$best" 'BEGIN { print v / 1e9 }')" "${best_at//_/ }" \
      "$point" "$sample" "${kept//_/ }" "$(awk -v v="$kept_score" 'BEGIN { print v / 1e9 }')"
    echo "$point $sample" >>"$OUT/within.$k"
    [ "$kept" = none ] || echo "$k $rep ${kept//_/ }" >>"$OUT/kept"
  done
  printf '%s: median points to within 5%% %s, median samples %s\n' "$name" \
    "$(awk '{ print $1 }' "$OUT/within.$k" | median)" "$(awk '{ print $2 }' "$OUT/within.$k" | median)"
done

[ "$VERIFY" -gt 0 ] && [ -s "$OUT/kept" ] || exit 0
# The kept points at fixed settings: columns fusion_threshold_bytes, cycle_time_ms and
# cache_capacity of the log (hierarchical: one host has no hierarchy to switch).
echo "# kept points at fixed settings, $VERIFY rounds, busbw of hvd_bench $STEP"
for round in $(seq 1 "$VERIFY"); do
  while read -r k rep fusion cycle cache _; do
    b=${builds[$k]}
    # shellcheck disable=SC2086 # START and STEP are lists of words
    ${LOCK:+flock "$LOCK"} env $START HVD_FUSION_THRESHOLD="$fusion" HVD_CYCLE_TIME="$cycle" \
      HVD_CACHE_CAPACITY="$cache" "$b/tools/hvdrun/hvdrun" --no-prefix -np "$NP" \
      "$b/bench/hvd_bench" $STEP -x none -t 2 </dev/null |
      awk -v k="$k" -v rep="$rep" '!/^#/ && NF >= 7 { print k, rep, $7 }' >>"$OUT/verify"
  done <"$OUT/kept"
done
# Per kept point its median busbw; the best among the grid searches' (else all) is 1.00x.
while read -r k rep _; do
  echo "$k $rep $(awk -v k="$k" -v rep="$rep" '$1 == k && $2 == rep { print $3 }' "$OUT/verify" | median)"
done <"$OUT/kept" >"$OUT/verified"
grid_ks=" $(for k in "${!searches[@]}"; do [ "${searches[$k]}" != grid ] || echo "$k"; done | tr '\n' ' ')"
[ "$grid_ks" != " " ] || grid_ks=" $(seq -s ' ' 0 $((${#builds[@]} - 1))) "
best=$(awk -v ks="$grid_ks" 'index(ks, " " $1 " ") && $3 > b { b = $3 } END { print b + 0 }' "$OUT/verified")
while read -r k rep busbw; do
  kept=$(awk -v k="$k" -v rep="$rep" '$1 == k && $2 == rep { $1 = $2 = ""; print substr($0, 3) }' "$OUT/kept")
  printf '%s run %s: kept [%s] busbw %s GB/s, %.2fx the best grid choice\n' "$(variant_name "$k")" \
    "$rep" "$kept" "$busbw" "$(awk -v v="$busbw" -v b="$best" 'BEGIN { print (b > 0 ? v / b : 0) }')"
done <"$OUT/verified"
