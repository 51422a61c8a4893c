# SPDX-License-Identifier: Apache-2.0
# The GPU module, libhvd-nccl.so.1: the only part of libhvd built with nvcc and linked with
# the CUDA runtime (statically, so it needs only the driver's libcuda at run time); NCCL is
# loaded by the module with dlopen, so only NCCL's header is needed here. libhvd.so finds the
# module beside itself (src/gpu/gpu_library.cc).
set(HVD_GPU_MODULE_BUILT OFF)
if(HVD_GPU STREQUAL "OFF")
  return()
endif()

if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
find_path(HVD_NCCL_INCLUDE_DIR nccl.h
  HINTS ${HVD_NCCL_ROOT}/include ${HVD_NCCL_ROOT}
  PATHS /usr/local/cuda/include /usr/include)
if(NOT CMAKE_CUDA_COMPILER OR NOT HVD_NCCL_INCLUDE_DIR)
  set(missing "")
  if(NOT CMAKE_CUDA_COMPILER)
    string(APPEND missing " nvcc (CUDA toolkit; set CMAKE_CUDA_COMPILER)")
  endif()
  if(NOT HVD_NCCL_INCLUDE_DIR)
    string(APPEND missing " nccl.h (set HVD_NCCL_ROOT, e.g. to PyPI's nvidia-nccl-cu13 nvidia/nccl)")
  endif()
  if(HVD_GPU STREQUAL "ON")
    message(FATAL_ERROR "HVD_GPU=ON but the GPU module cannot be built: missing${missing}")
  endif()
  message(STATUS "GPU module not built: missing${missing}")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  # Turing to Hopper as machine code, Hopper's PTX for newer GPUs (JIT-compiled by the driver).
  set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 90)
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)

add_library(hvd_nccl MODULE
  ${PROJECT_SOURCE_DIR}/src/gpu/module/module_table.cc
  ${PROJECT_SOURCE_DIR}/src/gpu/module/nccl_table.cc
  ${PROJECT_SOURCE_DIR}/src/gpu/module/scale_kernels.cu)
set_target_properties(hvd_nccl PROPERTIES
  PREFIX "lib" OUTPUT_NAME "hvd-nccl" SUFFIX ".so.${HVD_ABI_VERSION}"
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/src
  CUDA_RUNTIME_LIBRARY Static CUDA_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(hvd_nccl PRIVATE
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include
  ${HVD_NCCL_INCLUDE_DIR} ${CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES})
find_package(CUDAToolkit REQUIRED)
target_link_libraries(hvd_nccl PRIVATE CUDA::cudart_static Threads::Threads ${CMAKE_DL_LIBS})
target_compile_options(hvd_nccl PRIVATE
  $<$<COMPILE_LANGUAGE:CXX>:${HVD_WARNINGS}>
  $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${HVD_WERROR}>>:--Werror=all-warnings>)
# A soname of its own, as a library in the system's library directory has (libhvd-nccl1).
target_link_options(hvd_nccl PRIVATE -Wl,--no-undefined -Wl,--exclude-libs,ALL
  -Wl,-soname,libhvd-nccl.so.${HVD_ABI_VERSION})
install(TARGETS hvd_nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT gpu)
set(HVD_GPU_MODULE_BUILT ON)
message(STATUS "GPU module: libhvd-nccl.so.${HVD_ABI_VERSION} (nccl.h from ${HVD_NCCL_INCLUDE_DIR})")
