#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU checks of libhvd, as one script with its own time bound: the GPU module's loader,
# every collective on CUDA tensors (NCCL on one rank, host-staged with two ranks sharing the
# GPU and with HVD_GPU_OPERATIONS=host), hvd.torch and the NumPy package on CUDA memory, and
# hvd_bench --device cuda beside a device-memcpy bound. Prints one summary line per check at
# the end.
#
#   scripts/gpu_check.sh                 build with the GPU module here (scripts/common.sh's
#                                        build, NCCL's header from PyPI), then run the checks
#   scripts/gpu_check.sh --pack DIR      build here, then put what the checks need in DIR: the
#                                        programs, libhvd, the GPU module and the shared
#                                        libraries they load (UCX, cmocka), the Python package
#   scripts/gpu_check.sh --kit DIR       run the checks from a packed DIR, on a machine that
#                                        cannot build (no UCX or cmocka, no network)
#
# NCCL at run time: HVD_NCCL_LIBRARY if set, else PyPI's nvidia-nccl-cu13 of python3, else the
# system's libnccl.so.2. GPU_CHECK_SECONDS (default 420) bounds the whole run. Where OUT names a
# directory (the device tool's $OUT), the whole log and the benchmarks' outputs are kept there
# too, since a tool may return only the end of the output.
set -uo pipefail

if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ -z "${GPU_CHECK_LOGGING:-}" ]; then
  GPU_CHECK_LOGGING=1 "$BASH" "$0" "$@" 2>&1 | tee "$OUT/gpu_check.log"
  exit "${PIPESTATUS[0]}"
fi

mode=build
dir=""
case "${1:-}" in
  --pack) mode=pack; dir=${2:?--pack takes a directory} ;;
  --kit) mode=kit; dir=${2:?--kit takes a directory} ;;
  "") ;;
  *) echo "usage: gpu_check.sh [--pack DIR | --kit DIR]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)

build_here() {
  source "$root/scripts/common.sh"
  hvd_install_missing
  hvd_python_venv
  mapfile -t gpu_args < <(hvd_nccl_args)
  [ ${#gpu_args[@]} -gt 0 ] || { echo "gpu_check: no CUDA toolkit here" >&2; exit 2; }
  hvd_build -DHVD_GPU=ON "${gpu_args[@]}" || exit 2
}

if [ "$mode" = pack ]; then
  build_here
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/python"
  b="$BUILD_DIR"
  cp "$b/tools/hvdrun/hvdrun" "$b/tests/gpu_collectives" "$b/tests/test_gpu_library" \
    "$b/bench/hvd_bench" "$b/bench/peers/nccl_allreduce_perf" "$b/bench/peers/cuda_copy_bw" \
    "$dir/bin/"
  cp -P "$b"/src/libhvd.so* "$b/src/libhvd-nccl.so.1" "$dir/lib/"
  for f in "$b"/tests/libfake_*.so; do  # the loader's test libraries, not the fake device
    [[ $f == */libfake_gpu_device.so ]] || cp "$f" "$dir/lib/"
  done
  cp -L "$(ldd "$b/tests/gpu_collectives" | awk '/libcudart/ {print $3}')" "$dir/lib/"
  # The shared libraries a plain CUDA image may lack; glibc and libstdc++ are taken from there.
  for f in "$dir"/bin/* "$dir/lib/libhvd.so.1"; do
    ldd "$f" | awk '$3 ~ /^\// {print $3}' |
      grep -E 'libuc[pstm]|libnuma|libcmocka|libhwloc|libudev' || true
  done | sort -u | xargs -r cp -L -t "$dir/lib/"
  cp -r /usr/lib/x86_64-linux-gnu/ucx "$dir/lib/ucx"
  rm -f "$dir"/lib/ucx/*.a "$dir"/lib/ucx/*.la
  # The built package: with its pybind11 extension (for this Python version; where the kit's
  # Python differs, the checks run on the ctypes backend alone), without the framework plugins.
  cp -r "$b/python/hvd" "$dir/python/"
  find "$dir/python" -name __pycache__ -prune -exec rm -rf {} +
  rm -f "$dir"/python/hvd/tensorflow/*.so "$dir"/python/hvd/jax/*.so
  # Debug information is most of the size; the device tool carries at most 64 MiB.
  find "$dir" -type f \( -name '*.so*' -o -path "$dir/bin/*" \) -exec strip --strip-debug {} +
  cp "$root/scripts/gpu_check.sh" "$dir/"
  mkdir -p "$dir/examples"
  cp "$root/tests/gpu/torch_cuda_check.py" "$root/tests/gpu/numpy_cuda_check.py" \
    "$root/bench/gpu_goals.py" "$dir/examples/"
  du -sh "$dir"
  exit 0
fi

if [ "$mode" = build ]; then
  build_here
  bin="$BUILD_DIR"
  hvdrun="$bin/tools/hvdrun/hvdrun"
  gpu_collectives="$bin/tests/gpu_collectives"
  test_gpu_library="$bin/tests/test_gpu_library"
  hvd_bench="$bin/bench/hvd_bench"
  nccl_peer="$bin/bench/peers/nccl_allreduce_perf"
  copy_peer="$bin/bench/peers/cuda_copy_bw"
  gpu_goals="$root/bench/gpu_goals.py"
  pythonpath="$BUILD_DIR/python"
  torch_check="$root/tests/gpu/torch_cuda_check.py"
  numpy_check="$root/tests/gpu/numpy_cuda_check.py"
  export LD_LIBRARY_PATH="$BUILD_DIR/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  kit=$(cd "$dir" && pwd)
  hvdrun="$kit/bin/hvdrun"
  gpu_collectives="$kit/bin/gpu_collectives"
  test_gpu_library="$kit/bin/test_gpu_library"
  hvd_bench="$kit/bin/hvd_bench"
  nccl_peer="$kit/bin/nccl_allreduce_perf"
  copy_peer="$kit/bin/cuda_copy_bw"
  gpu_goals="$kit/examples/gpu_goals.py"
  pythonpath="$kit/python"
  torch_check="$kit/examples/torch_cuda_check.py"
  numpy_check="$kit/examples/numpy_cuda_check.py"
  export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export UCX_MODULE_DIR="$kit/lib/ucx"
  export HVD_GPU_MODULE="$kit/lib/libhvd-nccl.so.1"
  export HVD_LIBRARY="$kit/lib/libhvd.so.1"
  export HVD_TEST_LIBRARY_DIR="$kit/lib"
fi

if [ -z "${HVD_NCCL_LIBRARY:-}" ]; then
  nccl=$(timeout 60 python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
  [ -n "$nccl" ] && [ -f "$nccl" ] && export HVD_NCCL_LIBRARY="$nccl"
fi
echo "== NCCL: ${HVD_NCCL_LIBRARY:-libnccl.so.2 from the system}"
timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  2>/dev/null || true

deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-420}))
# The correctness checks end by phase_end, which keeps time for the benchmarks after them: a
# check that hangs costs its own limit, never the benchmarks' tables.
bench_reserve=150
phase_end=$((deadline - bench_reserve))
results=()
check() { # check NAME SECONDS COMMAND...: runs it bounded, records PASS/FAIL/SKIP and its time
  local name=$1 limit=$2
  shift 2
  local left=$((phase_end - SECONDS))
  [ "$left" -gt 5 ] || { results+=("INCOMPLETE $name (out of time)"); return; }
  [ "$limit" -le "$left" ] || limit=$left
  echo "== $name"
  local start=$SECONDS
  timeout --kill-after=5 "$limit" "$@"
  local rc=$? took=" ($((SECONDS - start)) s)"
  case $rc in
    0) results+=("PASS $name$took") ;;
    77) results+=("SKIP $name (no CUDA device)") ;;
    124) results+=("FAIL $name (timed out after ${limit} s)") ;;
    *) results+=("FAIL $name (exit $rc)$took") ;;
  esac
}

check "GPU module loader" 30 "$test_gpu_library"
check "collectives on CUDA tensors, 1 rank (NCCL)" 90 \
  env GPU_CHECK_EXPECT_NCCL=1 "$hvdrun" -np 1 "$gpu_collectives"
check "collectives on CUDA tensors, 2 ranks sharing the GPU (host-staged)" 120 \
  "$hvdrun" -np 2 "$gpu_collectives"
check "collectives on CUDA tensors, 1 rank, HVD_GPU_OPERATIONS=host" 90 \
  env HVD_GPU_OPERATIONS=host "$hvdrun" -np 1 "$gpu_collectives"
if timeout 120 python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  # Both Python backends where the pybind11 extension imports (it is built for one Python).
  backends=(ctypes)
  if PYTHONPATH="$pythonpath" HVD_PY_BACKEND=pybind timeout 60 python3 -c 'import hvd' \
    2>/dev/null; then
    backends+=(pybind)
  else
    results+=("SKIP the pybind11 backend's Python checks (its extension does not import here)")
  fi
  for backend in "${backends[@]}"; do
    for np in 1 2; do
      check "hvd.torch on CUDA tensors, $np rank(s), $backend" 60 \
        env PYTHONPATH="$pythonpath" HVD_PY_BACKEND=$backend "$hvdrun" -np $np python3 \
        "$torch_check"
      check "NumPy package on CUDA arrays (PyTorch, DLPack, CuPy if there), $np rank(s), $backend" \
        60 env PYTHONPATH="$pythonpath" HVD_PY_BACKEND=$backend "$hvdrun" -np $np python3 \
        "$numpy_check"
    done
  done
else
  results+=("SKIP hvd.torch and the NumPy package on CUDA arrays (no torch with CUDA)")
fi
# The benchmarks, where a device is. The performance goals: each path beside what bounds it,
# on the same sizes (bench/gpu_goals.py). The NCCL path runs one rank per visible GPU, out of
# place: on one GPU an in-place NCCL allreduce moves nothing (out of place it is a copy), so
# there the table compares the cost per op.
phase_end=$deadline
timeout 60 "$copy_peer" -b 4 -e 4 -x none -t 0.001 >/dev/null 2>&1
probe=$?
if [ $probe -eq 0 ]; then
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    out=$OUT
  else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
  fi
  gpus=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU ') || true
  [ "${gpus:-0}" -ge 1 ] || gpus=1
  sweep=(-b 4K -e 256M -f 4 -t 0.2)
  tee_to=(bash -c 'set -o pipefail; "$@" | tee "$0"')  # tee_to FILE COMMAND...
  check "hvd_bench --device cuda allreduce, $gpus rank(s), nccl, out of place" 60 \
    "${tee_to[@]}" "$out/hvd_nccl.txt" env HVD_GPU_OPERATIONS=nccl "$hvdrun" -np "$gpus" \
    "$hvd_bench" --device cuda -i 0 "${sweep[@]}"
  check "raw NCCL allreduce, $gpus GPU(s), out of place (bench/peers/nccl_allreduce_perf)" 60 \
    "${tee_to[@]}" "$out/raw_nccl.txt" "$nccl_peer" -g "$gpus" -i 0 "${sweep[@]}"
  check "hvd_bench --device cuda allreduce, 1 rank, host" 60 \
    "${tee_to[@]}" "$out/hvd_host.txt" env HVD_GPU_OPERATIONS=host "$hvdrun" -np 1 \
    "$hvd_bench" --device cuda "${sweep[@]}"
  check "copy-bound model of the host path (bench/peers/cuda_copy_bw)" 45 \
    "${tee_to[@]}" "$out/copy_model.txt" "$copy_peer" -d staged "${sweep[@]}"
  check "both copy directions at once (bench/peers/cuda_copy_bw -d duplex)" 45 \
    "${tee_to[@]}" "$out/copy_duplex.txt" "$copy_peer" -d duplex "${sweep[@]}"
  duplex=()  # the third table only where the duplex run measured something
  grep -q ' duplex ' "$out/copy_duplex.txt" 2>/dev/null &&
    duplex=(--duplex-model "$out/copy_duplex.txt")
  check "performance goals (a table; a missed goal is reported, not failed)" 20 \
    python3 "$gpu_goals" --nccl-path "$out/hvd_nccl.txt" --raw-nccl "$out/raw_nccl.txt" \
    --host-path "$out/hvd_host.txt" --copy-model "$out/copy_model.txt" "${duplex[@]}"
  check "hvd_bench --device cuda allgather, 2 ranks sharing the GPU" 60 \
    "$hvdrun" -np 2 "$hvd_bench" --device cuda -c allgather -b 4K -e 64M -f 8 -t 0.2
  check "hvd_bench --device cuda allreduce, 2 ranks sharing the GPU (host-staged)" 60 \
    env HVD_GPU_OPERATIONS=host CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}" \
    "$hvdrun" -np 2 "$hvd_bench" --device cuda "${sweep[@]}"
  for coll in reducescatter alltoall; do
    check "hvd_bench --device cuda $coll, 2 ranks sharing the GPU (host-staged)" 45 \
      "$hvdrun" -np 2 "$hvd_bench" --device cuda -c $coll -b 4K -e 64M -f 8 -t 0.2
  done
elif [ $probe -eq 77 ]; then
  results+=("SKIP hvd_bench --device cuda and the GPU peers (no CUDA device)")
else
  results+=("FAIL the GPU probe (bench/peers/cuda_copy_bw, exit $probe): benchmarks not run")
fi

echo "== summary"
printf '%s\n' "${results[@]}"
! printf '%s\n' "${results[@]}" | grep -qE '^(FAIL|INCOMPLETE)'
