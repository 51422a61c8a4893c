#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_all.sh - run every peer baseline, then print a combined table.
#
# Runs from the directory that holds the built peers: build/bench/peers (CMake copies this
# script there beside the programs; `cmake --build build --target hvd_peers` builds them), or
# the scratch copy scripts/bench.sh makes of it to add libhvd's cases.
#
#   ./run_all.sh                 full run (about 7-9 minutes on 2 cores)
#   QUICK=1 ./run_all.sh         smoke test (small sizes, 1 repetition)
#
# Environment knobs:
#   REPS=3          repetitions of the key cases (the median is reported).
#                   Repetitions are interleaved (round 1 of every case, then
#                   round 2, ...) so slow drift of the host hits all peers.
#   TARGET=0.3      timed seconds per message size (per repetition)
#   ONLY="memcpy pingpong ucx mpi gloo torch"   subset of groups to run
#   CASE_TIMEOUT=240  seconds before a single case is killed
#   OUT=results/<timestamp>   output directory (raw outputs, manifest.tsv,
#                   summary.txt, summary.md)
#
# Adding a peer (e.g. libhvd) to the same run: create peers.local.sh next to
# this script; it is sourced after the built-in cases and can call
#   add_case coll LABEL NREPS CMD ARGS...
# where CMD prints the bench_common.h format ("# ... coll=allreduce
# nranks=2 ..." header, then "size_bytes count dtype op time_us algbw_GBps
# busbw_GBps" lines and "# errors: N").  "${SWEEP[@]}" holds the common size
# and timing flags (-t/-e/-x); e.g.
#   add_case coll hvd_np2 "$REPS" "${MPIRUN[@]}" -np 2 ./hvd_allreduce_perf "${SWEEP[@]}"
#
# Only processes started by this script are signalled, by PID.
set -u
cd "$(dirname "$0")" || exit 2

PY=/usr/bin/python3
QUICK=${QUICK:-0}
REPS=${REPS:-3}
TARGET=${TARGET:-0.3}
ONLY=${ONLY:-"memcpy pingpong ucx mpi gloo torch"}
CASE_TIMEOUT=${CASE_TIMEOUT:-240}
OUT=${OUT:-results/$(date +%Y%m%d-%H%M%S)}
SWEEP=(-t "$TARGET")
UCX_N_LAT=100000 UCX_N_BW4=300 UCX_N_BW64=20
if [ "$QUICK" = 1 ]; then
  REPS=1
  TARGET=0.05
  SWEEP=(-t "$TARGET" -e 1M -x none)
  UCX_N_LAT=10000 UCX_N_BW4=30 UCX_N_BW64=4
fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
MPI_UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)

want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

# ---------------------------------------------------------------- programs
# Built by CMake (bench/peers/CMakeLists.txt); a group whose program is missing is an error.
need() { # need GROUP PROGRAM...
  local p
  want "$1" || return 0
  shift
  for p in "$@"; do
    [ -x "./$p" ] && continue
    echo "run_all.sh: no ./$p here (build the target hvd_peers; Open MPI needs libopenmpi-dev," \
      "Gloo libgloo-dev), or leave its group out of ONLY" >&2
    exit 1
  done
}
need memcpy memcpy_bw
need pingpong tcp_pingpong
need mpi mpi_allreduce_perf
need gloo gloo_allreduce_perf

mkdir -p "$OUT" || exit 2
manifest="$OUT/manifest.tsv"
printf 'label\tkind\trep\tfile\trc\tsecs\tcmd\n' >"$manifest"

# ---------------------------------------------------------------- sysinfo
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# kernel: $(uname -r)  nproc: $(nproc)"
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|Hypervisor|NUMA node\(s\))' | sed 's/^/# /'
  free -g | sed 's/^/# /'
  echo "# thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
  echo "# glibc: $(ldd --version | head -1)"
  /lib64/ld-linux-x86-64.so.2 --list-diagnostics 2>/dev/null |
    grep -E 'non_temporal_threshold|rep_movsb_threshold|shared_cache_size|level3_cache_size' | sed 's/^/# /'
  echo "# $(mpirun --version 2>&1 | head -1)"
  echo "# ucx: $(ucx_info -v 2>/dev/null | head -1)"
  echo "# torch: $($PY -c 'import torch; print(torch.__version__)' 2>&1)"
  echo "# gloo: $(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null)"
} >"$OUT/sysinfo.txt" 2>&1

# ---------------------------------------------------------------- cases
CASE_KIND=() CASE_LABEL=() CASE_REPS=() CASE_CMD=()
add_case() { # add_case KIND LABEL NREPS CMD ARGS...
  CASE_KIND+=("$1")
  CASE_LABEL+=("$2")
  CASE_REPS+=("$3")
  shift 3
  CASE_CMD+=("$(printf '%q ' "$@")")
}

# ucx_perftest server + client on 127.0.0.1.  Usage: ucx_pair TLS ARGS...
UCX_PORT=$((20000 + RANDOM % 20000))
ucx_pair() {
  local tls=$1 spid try rc=1 waited
  shift
  UCX_PORT=$((UCX_PORT + 1))
  echo "# ucx_perftest UCX_TLS=$tls $*"
  UCX_TLS=$tls timeout -k 5 60 ucx_perftest -p "$UCX_PORT" >/dev/null 2>&1 &
  spid=$!
  for ((try = 0; try < 20; try++)); do
    sleep 0.3
    UCX_TLS=$tls timeout -k 5 60 ucx_perftest 127.0.0.1 -p "$UCX_PORT" -f "$@" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] && break
    kill -0 "$spid" 2>/dev/null || break # server gone: do not retry
  done
  for ((waited = 0; waited < 50; waited++)); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$spid" 2>/dev/null; then kill "$spid" 2>/dev/null; fi
  wait "$spid" 2>/dev/null
  return "$rc"
}

if want memcpy; then
  add_case memcpy memcpy_p1 "$REPS" ./memcpy_bw -p 1 "${SWEEP[@]}"
  add_case memcpy memcpy_p2 "$REPS" ./memcpy_bw -p 2 "${SWEEP[@]}"
  # same, with glibc's non-temporal-store threshold lowered to 4 MiB (on this
  # VM glibc derives 192 MiB from a bogus 256 MiB L3 reported by CPUID)
  add_case memcpy memcpy_nt_p1 1 env GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=0x400000 ./memcpy_bw -p 1 "${SWEEP[@]}"
  add_case memcpy memcpy_nt_p2 1 env GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=0x400000 ./memcpy_bw -p 2 "${SWEEP[@]}"
  add_case memcpy sum_p1 1 ./memcpy_bw -o sum -p 1 "${SWEEP[@]}"
  add_case memcpy sum_p2 1 ./memcpy_bw -o sum -p 2 "${SWEEP[@]}"
fi
if want pingpong; then
  add_case pingpong tcp_pingpong_8B "$REPS" ./tcp_pingpong -s 8 -t 0.5
fi
if want ucx; then
  for t in posix sysv "posix,cma" tcp; do
    l=${t/,/_}
    add_case ucx "ucx_${l}_tag_lat_8B" "$REPS" ucx_pair "$t" -t tag_lat -s 8 -n "$UCX_N_LAT" -w 10000
    add_case ucx "ucx_${l}_tag_bw_4MiB" "$REPS" ucx_pair "$t" -t tag_bw -s 4194304 -n "$UCX_N_BW4" -w 30
    add_case ucx "ucx_${l}_tag_bw_64MiB" 1 ucx_pair "$t" -t tag_bw -s 67108864 -n "$UCX_N_BW64" -w 3
  done
fi
if want mpi; then
  A=./mpi_allreduce_perf
  add_case coll mpi_ob1_default_np2 "$REPS" "${MPIRUN[@]}" -np 2 $A "${SWEEP[@]}"
  add_case coll mpi_ob1_vader_np2 "$REPS" "${MPIRUN[@]}" -np 2 --mca pml ob1 --mca btl self,vader $A "${SWEEP[@]}"
  add_case coll mpi_ucx_np2 "$REPS" "${MPIRUN[@]}" -np 2 "${MPI_UCX[@]}" $A "${SWEEP[@]}"
  add_case coll mpi_ob1_tcp_np2 "$REPS" "${MPIRUN[@]}" -np 2 --mca pml ob1 --mca btl self,tcp $A "${SWEEP[@]}"
  # diagnostics (1 repetition): out-of-place; THP-backed malloc (Open MPI
  # mallocs a message-sized temp buffer per call; >= 32 MiB that is a fresh
  # mmap, i.e. page faults, every call)
  add_case coll mpi_ob1_default_oop_np2 1 "${MPIRUN[@]}" -np 2 $A -i 0 "${SWEEP[@]}"
  add_case coll mpi_ob1_default_thp_np2 1 "${MPIRUN[@]}" -np 2 -x GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $A "${SWEEP[@]}"
  add_case coll mpi_ob1_default_allgather_np2 1 "${MPIRUN[@]}" -np 2 $A -c allgather "${SWEEP[@]}"
  add_case coll mpi_ob1_default_broadcast_np2 1 "${MPIRUN[@]}" -np 2 $A -c broadcast "${SWEEP[@]}"
  add_case coll mpi_ucx_allgather_np2 1 "${MPIRUN[@]}" -np 2 "${MPI_UCX[@]}" $A -c allgather "${SWEEP[@]}"
  add_case coll mpi_ucx_broadcast_np2 1 "${MPIRUN[@]}" -np 2 "${MPI_UCX[@]}" $A -c broadcast "${SWEEP[@]}"
  add_case coll mpi_ob1_default_np4 1 "${MPIRUN[@]}" -np 4 $A "${SWEEP[@]}"
  add_case coll mpi_ucx_np4 1 "${MPIRUN[@]}" -np 4 "${MPI_UCX[@]}" $A "${SWEEP[@]}"
fi
if want gloo; then
  G=./gloo_allreduce_perf
  add_case coll gloo_new_np2 "$REPS" ./launch_local.sh 2 $G -A new "${SWEEP[@]}"
  add_case coll gloo_new_oop_np2 1 ./launch_local.sh 2 $G -A new -i 0 "${SWEEP[@]}"
  add_case coll gloo_ring_np2 1 ./launch_local.sh 2 $G -A ring "${SWEEP[@]}"
  add_case coll gloo_hd_np2 1 ./launch_local.sh 2 $G -A hd "${SWEEP[@]}"
  add_case coll gloo_bcube_np2 1 ./launch_local.sh 2 $G -A bcube "${SWEEP[@]}"
  add_case coll gloo_allgather_np2 1 ./launch_local.sh 2 $G -c allgather "${SWEEP[@]}"
  add_case coll gloo_broadcast_np2 1 ./launch_local.sh 2 $G -c broadcast "${SWEEP[@]}"
fi
if want torch; then
  T=(./launch_local.sh 2 "$PY" torch_allreduce_perf.py)
  add_case coll torch_gloo_np2 "$REPS" "${T[@]}" "${SWEEP[@]}"
  add_case coll torch_gloo_allgather_np2 1 "${T[@]}" -c allgather "${SWEEP[@]}"
  add_case coll torch_gloo_broadcast_np2 1 "${T[@]}" -c broadcast "${SWEEP[@]}"
fi
if [ -f peers.local.sh ]; then
  # shellcheck disable=SC1091
  . ./peers.local.sh
fi

# ---------------------------------------------------------------- run
maxreps=1
for n in "${CASE_REPS[@]}"; do [ "$n" -gt "$maxreps" ] && maxreps=$n; done
echo "== running ${#CASE_LABEL[@]} cases, up to $maxreps rounds, output in $OUT"
start=$SECONDS
for ((r = 1; r <= maxreps; r++)); do
  echo "-- round $r/$maxreps"
  for i in "${!CASE_LABEL[@]}"; do
    [ "${CASE_REPS[i]}" -ge "$r" ] || continue
    label=${CASE_LABEL[i]}
    f="$label.r$r.txt"
    t0=$(date +%s.%N)
    eval "set -- ${CASE_CMD[i]}"
    if declare -F "$1" >/dev/null; then
      "$@" >"$OUT/$f" 2>"$OUT/$label.r$r.err"
    else
      timeout -k 10 "$CASE_TIMEOUT" "$@" >"$OUT/$f" 2>"$OUT/$label.r$r.err"
    fi
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    printf '%s\t%s\t%d\t%s\t%d\t%s\t%s\n' "$label" "${CASE_KIND[i]}" "$r" "$f" "$rc" "$secs" \
      "${CASE_CMD[i]}" >>"$manifest"
    printf '  %-34s rc=%-3d %6ss\n' "$label" "$rc" "$secs"
  done
done
echo "== total run time $((SECONDS - start)) s"

# ---------------------------------------------------------------- summary
"$PY" summarize.py "$OUT" | tee "$OUT/summary.txt"
echo "== raw outputs, manifest.tsv, summary.txt and summary.md are in $OUT"
