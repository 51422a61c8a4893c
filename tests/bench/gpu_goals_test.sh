#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# gpu_goals_test.sh GPU_GOALS_PY: bench/gpu_goals.py reads hvd_bench's output under hvdrun and
# the GPU peers' output, pairs them by size and judges each ratio against its goal.
set -eu
goals=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/hvd_nccl.txt" <<'OUT'
[0]<stdout>: # hvd_bench: coll=allreduce nranks=1 inplace=1 dtype=float32 op=sum
[0]<stdout>: # size_bytes count dtype op time_us algbw_GBps busbw_GBps
[0]<stdout>:         4096         1024  float32    sum        10.50      0.390      0.000
[0]<stdout>:      1048576       262144  float32    sum       200.00      5.243      0.000
[0]<stdout>:     16777216      4194304  float32    sum       900.00     18.641      0.000
[0]<stdout>: # errors: 0
OUT
cat >"$dir/raw_nccl.txt" <<'OUT'
# nccl_allreduce_perf: coll=allreduce nranks=1 inplace=1 dtype=float32 op=sum
        4096         1024    float    sum        10.00      0.410      0.000
     1048576       262144    float    sum       100.00     10.486      0.000
    16777216      4194304    float    sum       870.00     19.284      0.000
# errors: 0
OUT
cat >"$dir/hvd_host.txt" <<'OUT'
[0]<stdout>:      1048576       262144  float32    sum       109.00      9.620      0.000
[0]<stdout>:     16777216      4194304  float32    sum       800.00     20.972      0.000
[0]<stdout>:     67108864     16777216  float32    sum      3000.00     22.370      0.000
OUT
cat >"$dir/copy.txt" <<'OUT'
     1048576      1048576     byte staged       100.00     10.486     10.486
    16777216     16777216     byte staged       700.00     23.968     23.968
OUT
cat >"$dir/duplex.txt" <<'OUT'
     1048576      1048576     byte duplex        50.00     20.972     20.972
    16777216     16777216     byte duplex       750.00     22.370     22.370
OUT
python3 "$goals" --nccl-path "$dir/hvd_nccl.txt" --raw-nccl "$dir/raw_nccl.txt" \
  --host-path "$dir/hvd_host.txt" --copy-model "$dir/copy.txt" \
  --duplex-model "$dir/duplex.txt" >"$dir/table.md"
cat "$dir/table.md"
expect() {
  grep -qF -- "$1" "$dir/table.md" || { echo "FAIL: no line '$1'"; exit 1; }
}
# Below 16 MiB the per-step and back-to-back timings are shown, not judged.
expect "| 4 KiB | 10.50 | 10.00 | 1.050 | (latency-bound: not judged) |"
expect "| 1 MiB | 200.00 | 100.00 | 2.000 | (latency-bound: not judged) |"
expect "| 16 MiB | 900.00 | 870.00 | 1.034 | met |"
expect "| 16 MiB | 800.00 | 700.00 | 1.143 | MISSED |"
expect "| 16 MiB | 800.00 | 750.00 | 1.067 | met |"
if grep -qF "64 MiB" "$dir/table.md"; then echo "FAIL: a size only one side measured"; exit 1; fi
# A missing input: that comparison says so, the others still print, and the run succeeds.
python3 "$goals" --nccl-path "$dir/missing.txt" --raw-nccl "$dir/raw_nccl.txt" \
  --host-path "$dir/hvd_host.txt" --copy-model "$dir/copy.txt" >"$dir/partial.md" ||
  { echo "FAIL: a missing input failed the run"; exit 1; }
grep -qF "NCCL path: not compared" "$dir/partial.md" && grep -qF "missing.txt" "$dir/partial.md" ||
  { echo "FAIL: the missing input is not named"; cat "$dir/partial.md"; exit 1; }
grep -qF "| 16 MiB | 800.00 | 700.00 | 1.143 | MISSED |" "$dir/partial.md" ||
  { echo "FAIL: the host-path table is gone"; exit 1; }
echo "gpu_goals: ok"
