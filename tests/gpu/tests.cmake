# SPDX-License-Identifier: Apache-2.0
# The GPU layer. Everywhere: the module loader against libraries made here that it must refuse,
# and CUDA tensors refused cleanly where no device is usable. Where the GPU module was built:
# the real module with fake and real NCCL libraries. gpu_collectives checks every collective
# on CUDA tensors and skips (77) without a device: scripts/gpu_check.sh runs it on a GPU.
foreach(fake fake_module_no_entry fake_module_wrong_abi)
  add_library(${fake} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/gpu/${fake}.c)
endforeach()
add_library(fake_nccl_missing MODULE ${CMAKE_CURRENT_SOURCE_DIR}/gpu/fake_nccl.c)
target_compile_definitions(fake_nccl_missing PRIVATE FAKE_NCCL_MISSING FAKE_NCCL_VERSION=22000)
add_library(fake_nccl_old MODULE ${CMAKE_CURRENT_SOURCE_DIR}/gpu/fake_nccl.c)
target_compile_definitions(fake_nccl_old PRIVATE FAKE_NCCL_VERSION=2307)
foreach(fake fake_module_no_entry fake_module_wrong_abi fake_nccl_missing fake_nccl_old)
  target_compile_options(${fake} PRIVATE ${HVD_WARNINGS})
endforeach()

add_executable(test_gpu_library ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_gpu_library.cc)
target_link_libraries(test_gpu_library PRIVATE hvd_internal PkgConfig::CMOCKA)
target_compile_options(test_gpu_library PRIVATE ${HVD_WARNINGS}
  -include ${CMAKE_CURRENT_SOURCE_DIR}/unit/cmocka_prelude.h)
target_compile_definitions(test_gpu_library PRIVATE
  HVD_FAKE_NO_ENTRY="$<TARGET_FILE:fake_module_no_entry>"
  HVD_FAKE_WRONG_ABI="$<TARGET_FILE:fake_module_wrong_abi>"
  HVD_FAKE_NCCL_MISSING="$<TARGET_FILE:fake_nccl_missing>"
  HVD_FAKE_NCCL_OLD="$<TARGET_FILE:fake_nccl_old>")
if(HVD_GPU_MODULE_BUILT)
  target_compile_definitions(test_gpu_library PRIVATE
    HVD_TEST_GPU_MODULE="$<TARGET_FILE:hvd_nccl>")
  if(EXISTS ${HVD_NCCL_INCLUDE_DIR}/../lib/libnccl.so.2)
    get_filename_component(nccl_lib ${HVD_NCCL_INCLUDE_DIR}/../lib/libnccl.so.2 ABSOLUTE)
    target_compile_definitions(test_gpu_library PRIVATE HVD_TEST_NCCL_LIBRARY="${nccl_lib}")
  endif()
  add_dependencies(test_gpu_library hvd_nccl)
endif()
add_dependencies(test_gpu_library fake_module_no_entry fake_module_wrong_abi fake_nccl_missing
                 fake_nccl_old)
add_test(NAME unit.test_gpu_library COMMAND test_gpu_library)
set_tests_properties(unit.test_gpu_library PROPERTIES LABELS "unit;gpu" TIMEOUT 120)

add_executable(test_device_watch ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_device_watch.cc)
target_link_libraries(test_device_watch PRIVATE hvd_internal PkgConfig::CMOCKA)
target_include_directories(test_device_watch PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
target_compile_options(test_device_watch PRIVATE ${HVD_WARNINGS}
  -include ${CMAKE_CURRENT_SOURCE_DIR}/unit/cmocka_prelude.h)
add_test(NAME unit.test_device_watch COMMAND test_device_watch)
set_tests_properties(unit.test_device_watch PROPERTIES LABELS "unit;gpu" TIMEOUT 60)

add_executable(test_bounded_abort ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_bounded_abort.cc)
target_link_libraries(test_bounded_abort PRIVATE hvd_internal PkgConfig::CMOCKA)
target_compile_options(test_bounded_abort PRIVATE ${HVD_WARNINGS}
  -include ${CMAKE_CURRENT_SOURCE_DIR}/unit/cmocka_prelude.h)
add_test(NAME unit.test_bounded_abort COMMAND test_bounded_abort)
set_tests_properties(unit.test_bounded_abort PROPERTIES LABELS "unit;gpu;threads" TIMEOUT 60)

add_executable(test_device_staged_chunks
  ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_device_staged_chunks.cc)
target_link_libraries(test_device_staged_chunks PRIVATE hvd_internal PkgConfig::CMOCKA)
target_include_directories(test_device_staged_chunks PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
target_compile_options(test_device_staged_chunks PRIVATE ${HVD_WARNINGS}
  -include ${CMAKE_CURRENT_SOURCE_DIR}/unit/cmocka_prelude.h)
add_test(NAME unit.test_device_staged_chunks COMMAND test_device_staged_chunks)
set_tests_properties(unit.test_device_staged_chunks PROPERTIES LABELS "unit;gpu;threads"
  TIMEOUT 60)

add_executable(test_device_buffer ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_device_buffer.cc)
target_link_libraries(test_device_buffer PRIVATE hvd_internal PkgConfig::CMOCKA)
target_include_directories(test_device_buffer PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
target_compile_options(test_device_buffer PRIVATE ${HVD_WARNINGS}
  -include ${CMAKE_CURRENT_SOURCE_DIR}/unit/cmocka_prelude.h)
add_test(NAME unit.test_device_buffer COMMAND test_device_buffer)
set_tests_properties(unit.test_device_buffer PROPERTIES LABELS "unit;gpu" TIMEOUT 60)

# The NCCL path of several ranks and the host-staged path of ranks sharing a device, as
# threads of one process on the devices of a test module (fake_gpu_device.cc): where no GPU is.
add_library(fake_gpu_device MODULE ${CMAKE_CURRENT_SOURCE_DIR}/gpu/fake_gpu_device.cc
                                   ${PROJECT_SOURCE_DIR}/src/common/dtype.cc)
target_include_directories(fake_gpu_device PRIVATE ${PROJECT_SOURCE_DIR}/src
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
target_compile_options(fake_gpu_device PRIVATE ${HVD_WARNINGS})
target_link_libraries(fake_gpu_device PRIVATE Threads::Threads)
# A test program of the GPU paths that runs on the test module.
function(add_fake_device_test name)
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/gpu/${name}.cc)
  target_link_libraries(${name} PRIVATE hvd_internal PkgConfig::CMOCKA ${CMAKE_DL_LIBS})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
  target_compile_options(${name} PRIVATE ${HVD_WARNINGS}
    -include ${CMAKE_CURRENT_SOURCE_DIR}/unit/cmocka_prelude.h)
  target_compile_definitions(${name} PRIVATE HVD_FAKE_GPU_DEVICE="$<TARGET_FILE:fake_gpu_device>")
  add_dependencies(${name} fake_gpu_device)
endfunction()
add_fake_device_test(test_nccl_ranks)
add_test(NAME unit.test_nccl_ranks COMMAND test_nccl_ranks)
set_tests_properties(unit.test_nccl_ranks PROPERTIES LABELS "unit;gpu;threads" TIMEOUT 300)
# The same on the host path: the staged collectives, and one rank's ops left on its device.
add_test(NAME unit.test_nccl_ranks_host_path COMMAND test_nccl_ranks)
set_tests_properties(unit.test_nccl_ranks_host_path PROPERTIES LABELS "unit;gpu;threads"
  TIMEOUT 300 ENVIRONMENT "HVD_GPU_OPERATIONS=host")

# The hierarchical allreduce of CUDA tensors: hosts as processes (HVD_HOSTNAME), their ranks as
# threads on the test module's devices, NCCL within each host only.
add_fake_device_test(test_nccl_hierarchical)
add_test(NAME unit.test_nccl_hierarchical COMMAND test_nccl_hierarchical)
set_tests_properties(unit.test_nccl_hierarchical PROPERTIES LABELS "unit;gpu;threads"
  TIMEOUT 300)

add_executable(mp_cuda_refused ${CMAKE_CURRENT_SOURCE_DIR}/gpu/mp_cuda_refused.c
                               ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_check.c)
target_link_libraries(mp_cuda_refused PRIVATE hvd PkgConfig::CMOCKA m)
target_compile_options(mp_cuda_refused PRIVATE ${HVD_WARNINGS})
foreach(np 1 2 3)
  add_test(NAME mp.cuda_refused.np${np} COMMAND $<TARGET_FILE:hvdrun> -np ${np}
                                                 $<TARGET_FILE:mp_cuda_refused>)
  set_tests_properties(mp.cuda_refused.np${np} PROPERTIES LABELS "mp;gpu" TIMEOUT 60)
endforeach()
# No module at all: the message says what to install.
add_test(NAME mp.cuda_refused_no_module.np2 COMMAND $<TARGET_FILE:hvdrun> -np 2
                                                     $<TARGET_FILE:mp_cuda_refused>)
set_tests_properties(mp.cuda_refused_no_module.np2 PROPERTIES LABELS "mp;gpu" TIMEOUT 60
  ENVIRONMENT "HVD_GPU_MODULE=/nonexistent/libhvd-nccl.so.1")

find_package(CUDAToolkit QUIET)
if(HVD_GPU_MODULE_BUILT AND CUDAToolkit_FOUND)
  add_executable(gpu_collectives ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_collectives.cc
                                 ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_check.c)
  target_link_libraries(gpu_collectives PRIVATE hvd CUDA::cudart PkgConfig::CMOCKA m)
  target_compile_options(gpu_collectives PRIVATE ${HVD_WARNINGS})
  add_dependencies(gpu_collectives hvd_nccl)
  foreach(np 1 2)
    add_test(NAME gpu.collectives.np${np} COMMAND $<TARGET_FILE:hvdrun> -np ${np}
                                                  $<TARGET_FILE:gpu_collectives>)
    set_tests_properties(gpu.collectives.np${np} PROPERTIES LABELS gpu TIMEOUT 300
      SKIP_RETURN_CODE 77)
  endforeach()
  add_test(NAME gpu.collectives_host_path.np1 COMMAND $<TARGET_FILE:hvdrun> -np 1
                                                      $<TARGET_FILE:gpu_collectives>)
  set_tests_properties(gpu.collectives_host_path.np1 PROPERTIES LABELS gpu TIMEOUT 300
    SKIP_RETURN_CODE 77 ENVIRONMENT "HVD_GPU_OPERATIONS=host")
endif()
