#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# diagnostics.sh - reproduce the evidence behind the notes on the peers in
# docs/performance.md (about 1-2 minutes).  Runs from build/bench/peers, after
# `cmake --build build --target hvd_peers`.
#
#   ./diagnostics.sh [OUTDIR]      (default results/diag-<timestamp>)
#
#  1. Open MPI allreduce >= 32 MiB: minor page faults per call (-v output)
#     and the per-call mmap/munmap of a message-sized temp buffer (strace),
#     default malloc vs GLIBC_TUNABLES=glibc.malloc.hugetlb=1.
#  2. `--mca pml ucx` alone is refused by Open MPI 4.1 on a host without
#     Mellanox devices; pml_ucx_tls/pml_ucx_devices=any are needed.
#  3. UCX_TLS=cma alone cannot run tag tests (cma has no active messages).
#  4. Context switches / CPU time of Gloo's allreduce vs MPI at 32 B.
# Only processes started here are signalled, by PID (via timeout).
set -u
cd "$(dirname "$0")" || exit 2
OUT=${1:-results/diag-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" || exit 2
M=(timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe -np 2)
for p in mpi_allreduce_perf gloo_allreduce_perf; do
  [ -x "./$p" ] || { echo "diagnostics.sh: no ./$p here (build the target hvd_peers)" >&2; exit 1; }
done

echo "== 1. MPI page faults per call" | tee "$OUT/mpi_faults.txt"
for tun in "" "glibc.malloc.hugetlb=1"; do
  echo "# GLIBC_TUNABLES=$tun" >>"$OUT/mpi_faults.txt"
  "${M[@]}" -x GLIBC_TUNABLES="$tun" ./mpi_allreduce_perf -v -b 8M -e 256M -x 64M -t 0.2 \
    >>"$OUT/mpi_faults.txt" 2>&1
done
# strace of one rank: mmap/munmap calls during 32 MiB allreduces
"${M[@]}" strace -ff -e trace=mmap,munmap -o "$OUT/strace_mpi_32MiB.raw" \
  ./mpi_allreduce_perf -b 32M -e 32M -x none -t 0.2 -C 0 -v >"$OUT/strace_mpi_32MiB.txt" 2>&1
{
  echo "# mmap/munmap calls of >= 10 MB during the run above (all threads of both ranks;"
  echo "# the run does 1 warm-up + calibration + timed allreduces of 32 MiB)"
  cat "$OUT"/strace_mpi_32MiB.raw.* 2>/dev/null |
    grep -E "^(mmap\(NULL, [0-9]{8,}|munmap\(0x[0-9a-f]+, [0-9]{8,})" |
    sed -E 's/0x[0-9a-f]+/ADDR/g; s/ = .*//' | sort | uniq -c | sort -rn | head
} >>"$OUT/strace_mpi_32MiB.txt"
rm -f "$OUT"/strace_mpi_32MiB.raw.*

echo "== 2. pml ucx selection" | tee "$OUT/pml_ucx.txt"
{
  echo "# --mca pml ucx"
  "${M[@]}" --mca pml ucx ./mpi_allreduce_perf -e 8 -x none -t 0.01 2>&1 | head -20
  echo "# mpirun rc=${PIPESTATUS[0]}"
  echo "# --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
  "${M[@]}" --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
    ./mpi_allreduce_perf -e 8 -x none -t 0.01 2>&1 | head -20
  ompi_info --param pml ucx --level 9 | grep -E "pml_ucx_(tls|devices)"
} >>"$OUT/pml_ucx.txt" 2>&1

echo "== 3. UCX_TLS=cma alone" | tee "$OUT/ucx_cma.txt"
port=$((20000 + RANDOM % 20000))
UCX_TLS=cma timeout -k 5 30 ucx_perftest -p "$port" >/dev/null 2>&1 &
spid=$!
sleep 0.5
UCX_TLS=cma timeout -k 5 30 ucx_perftest 127.0.0.1 -p "$port" -t tag_bw -s 4194304 -n 10 \
  >>"$OUT/ucx_cma.txt" 2>&1
echo "# client rc=$?" >>"$OUT/ucx_cma.txt"
for ((i = 0; i < 50; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$spid" 2>/dev/null && kill "$spid"
wait "$spid" 2>/dev/null

echo "== 4. context switches at 32 B" | tee "$OUT/ctxsw_32B.txt"
if command -v perf >/dev/null; then
  for c in "./launch_local.sh 2 ./gloo_allreduce_perf -A new" \
           "./launch_local.sh 2 ./gloo_allreduce_perf -A ring" \
           "mpirun --allow-run-as-root --oversubscribe -np 2 ./mpi_allreduce_perf"; do
    echo "# $c -b 32 -e 32 -x none -t 1 -v" >>"$OUT/ctxsw_32B.txt"
    # shellcheck disable=SC2086
    timeout -k 5 120 perf stat -e context-switches,cpu-migrations,task-clock -- \
      $c -b 32 -e 32 -x none -t 1 -v >>"$OUT/ctxsw_32B.txt" 2>&1
  done
else
  echo "perf not installed" >>"$OUT/ctxsw_32B.txt"
fi
echo "== done: $OUT"
