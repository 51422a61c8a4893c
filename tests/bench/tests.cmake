# SPDX-License-Identifier: Apache-2.0
# Smoke tests of hvd_bench (label `bench`): the sweep runs under hvdrun, its results pass the
# element-wise check, and its output has the shared 7-column format. Short timed windows
# (-t 0.02): these check the tool, they do not measure anything. Included from
# tests/CMakeLists.txt; paths are relative to this file.
set(HVD_BENCH_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(HVD_BENCH_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR}/../../bench)

# The benchmark's own logic (encoding, pattern, checker, options), without a context.
add_executable(test_bench_pattern ${HVD_BENCH_TEST_DIR}/test_bench_pattern.c
  ${HVD_BENCH_SOURCE_DIR}/bench_pattern.c ${HVD_BENCH_SOURCE_DIR}/bench_dtype.c
  ${HVD_BENCH_SOURCE_DIR}/bench_options.c)
target_include_directories(test_bench_pattern PRIVATE ${HVD_BENCH_SOURCE_DIR})
target_link_libraries(test_bench_pattern PRIVATE hvd PkgConfig::CMOCKA m)
target_compile_options(test_bench_pattern PRIVATE ${HVD_WARNINGS})
add_test(NAME bench.pattern COMMAND test_bench_pattern)
set_tests_properties(bench.pattern PROPERTIES LABELS bench TIMEOUT 30)

# hvd_bench_test(<name> NP <n> SIZES <data lines expected> ARGS ...)
function(hvd_bench_test name)
  cmake_parse_arguments(T "" "NP;SIZES" "ARGS" ${ARGN})
  add_test(NAME bench.${name}
    COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh ${T_SIZES} --
            $<TARGET_FILE:hvdrun> -np ${T_NP} --no-prefix $<TARGET_FILE:hvd_bench> -t 0.02
            ${T_ARGS})
  set_tests_properties(bench.${name} PROPERTIES LABELS bench TIMEOUT 120
    ENVIRONMENT "HVD_OP_TIMEOUT=60;HVD_START_TIMEOUT=60")
endfunction()

# 8 B .. 64 KiB, x4: 8 sizes. "-c 1" is the issue's spelling of the result check.
hvd_bench_test(allreduce_np2 NP 2 SIZES 8 ARGS -b 8 -e 64K -x none -c 1)
hvd_bench_test(allreduce_oop_avg_np2 NP 2 SIZES 8 ARGS -b 8 -e 64K -x none -i 0 -o avg)
hvd_bench_test(allreduce_np4 NP 4 SIZES 5 ARGS -b 8 -e 2K -x none -d bfloat16 -o max)
# Fusion path: 16 tensors per step, 8 B .. 4 KiB (6 sizes).
hvd_bench_test(many16_np2 NP 2 SIZES 6 ARGS --many 16 -b 8 -e 4K)
# The same tensors as one grouped allreduce, on an odd number of ranks, out of place.
hvd_bench_test(grouped16_np3 NP 3 SIZES 6 ARGS --many 16 --grouped -b 8 -e 4K -i 0 -d int32)
hvd_bench_test(allgather_np3 NP 3 SIZES 4 ARGS -c allgather -b 12 -e 768 -x none)
hvd_bench_test(allgather_owned_np3 NP 3 SIZES 4 ARGS -c allgather -i 0 -b 12 -e 768 -x none)
hvd_bench_test(allgather_many_np2 NP 2 SIZES 4 ARGS -c allgather --many 4 -b 8 -e 128K -f 64 -x none)
hvd_bench_test(broadcast_np2 NP 2 SIZES 4 ARGS -c broadcast -r 1 -i 0 -b 8 -e 512 -x none)
hvd_bench_test(single_rank NP 1 SIZES 3 ARGS -b 8 -e 128 -x none -d int64)

# alltoall / reducescatter: measured where the ABI has them, else a clear refusal.
file(READ ${PROJECT_SOURCE_DIR}/include/hvd/hvd.h HVD_BENCH_HEADER_TEXT)
foreach(coll alltoall reducescatter)
  string(FIND "${HVD_BENCH_HEADER_TEXT}" "hvd_${coll}_enqueue" found)
  if(found GREATER -1)
    hvd_bench_test(${coll}_np2 NP 2 SIZES 4 ARGS -c ${coll} -b 8 -e 512 -x none)
    hvd_bench_test(${coll}_many_np3 NP 3 SIZES 3 ARGS -c ${coll} --many 4 -b 24 -e 384 -x none)
  else()
    add_test(NAME bench.${coll}_unsupported
      COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh --fails 2
              "${coll} is not supported by this libhvd" -- $<TARGET_FILE:hvd_bench> -c ${coll})
    set_tests_properties(bench.${coll}_unsupported PROPERTIES LABELS bench TIMEOUT 30)
  endif()
endforeach()

add_test(NAME bench.usage_error
  COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh --fails 2 "-d float7: unknown dtype" --
          $<TARGET_FILE:hvd_bench> -d float7)
set_tests_properties(bench.usage_error PROPERTIES LABELS bench TIMEOUT 30)
add_test(NAME bench.grouped_usage_error
  COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh --fails 2
          "--grouped takes -c allreduce" -- $<TARGET_FILE:hvd_bench> --grouped -c broadcast)
set_tests_properties(bench.grouped_usage_error PROPERTIES LABELS bench TIMEOUT 30)

# Completion by polling (hvd_request_test) and CPU binding before hvd_init.
hvd_bench_test(poll_np2 NP 2 SIZES 4 ARGS --poll -b 8 -e 512 -x none)
hvd_bench_test(bind_np2 NP 2 SIZES 4 ARGS --bind -b 8 -e 512 -x none)

# The peer benchmarks (bench/peers) that this build made print the same format and pass their
# own element-wise check: what scripts/bench.sh puts side by side with hvd_bench.
set(HVD_PEER_SWEEP -t 0.02 -b 8 -e 512 -x none)
find_program(HVD_MPIRUN mpirun)
if(TARGET mpi_allreduce_perf AND HVD_MPIRUN)
  set(HVD_PEER_MPIRUN ${HVD_MPIRUN} --allow-run-as-root --oversubscribe -np 2)
  add_test(NAME bench.peer_mpi_allreduce_np2
    COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh 4 -- ${HVD_PEER_MPIRUN}
            $<TARGET_FILE:mpi_allreduce_perf> ${HVD_PEER_SWEEP})
  add_test(NAME bench.peer_mpi_reducescatter_np2
    COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh 4 -- ${HVD_PEER_MPIRUN}
            $<TARGET_FILE:mpi_more_perf> -c reducescatter ${HVD_PEER_SWEEP})
  set_tests_properties(bench.peer_mpi_allreduce_np2 bench.peer_mpi_reducescatter_np2
    PROPERTIES LABELS bench TIMEOUT 120)
endif()
if(TARGET gloo_allreduce_perf)
  add_test(NAME bench.peer_gloo_allreduce_np2
    COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh 4 --
            $<TARGET_FILE_DIR:gloo_allreduce_perf>/launch_local.sh 2
            $<TARGET_FILE:gloo_allreduce_perf> ${HVD_PEER_SWEEP})
  set_tests_properties(bench.peer_gloo_allreduce_np2 PROPERTIES LABELS bench TIMEOUT 120
    ENVIRONMENT "LAUNCH_TIMEOUT=100")
endif()

# The GPU peers (raw NCCL, the copy model of the host-staged path) measure on a GPU only
# (scripts/gpu_check.sh); where none is they say why and are skipped (exit 77).
foreach(peer nccl_allreduce_perf cuda_copy_bw)
  if(TARGET ${peer})
    add_test(NAME bench.peer_${peer}
      COMMAND sh ${HVD_BENCH_TEST_DIR}/check_bench_output.sh 4 -- $<TARGET_FILE:${peer}>
              ${HVD_PEER_SWEEP})
    set_tests_properties(bench.peer_${peer} PROPERTIES LABELS "bench;gpu" TIMEOUT 120
      SKIP_RETURN_CODE 77)
  endif()
endforeach()
add_test(NAME bench.gpu_goals COMMAND sh ${HVD_BENCH_TEST_DIR}/gpu_goals_test.sh
  ${PROJECT_SOURCE_DIR}/bench/gpu_goals.py)
set_tests_properties(bench.gpu_goals PROPERTIES LABELS bench TIMEOUT 30)
