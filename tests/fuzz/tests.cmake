# SPDX-License-Identifier: Apache-2.0
# Fuzz targets: one LLVMFuzzerTestOneInput per tests/fuzz/fuzz_<name>.cc, each over the parsers
# of bytes that come from another process or the network (and the C API's argument checks).
# Two ways to run them:
#  - here (any compiler): with standalone_driver.cc, which replays tests/fuzz/corpus/<name>
#    and mutates it for a few seconds: ctest label fuzz. They link the library's test archive
#    as this build makes it: in the AddressSanitizer build (HVD_SANITIZE=address, which
#    `scripts/test.sh --sanitize` runs with label fuzz) every memory error and undefined
#    behaviour fails them; in a plain build a crash, an abort or a hang does.
#  - HVD_FUZZ_LIBFUZZER=ON (clang; scripts/fuzz.sh): with libFuzzer instead of the driver,
#    over their own copy of the library's objects with libFuzzer's coverage instrumentation
#    and the address and undefined-behaviour sanitizers.
option(HVD_BUILD_FUZZ "Build the fuzz targets (ctest label fuzz)" ON)
option(HVD_FUZZ_LIBFUZZER "Link the fuzz targets with libFuzzer (clang) instead of the driver"
  OFF)
set(HVD_FUZZ_SECONDS 4 CACHE STRING "Seconds of mutations per fuzz target under ctest")
if(NOT HVD_BUILD_FUZZ OR HVD_SANITIZE STREQUAL "thread")
  return()
endif()

set(fuzz_compile)
set(fuzz_link)
set(fuzz_lib hvd_internal)
if(HVD_FUZZ_LIBFUZZER)
  # Undefined behaviour stops the run (and so counts as a failure), like a memory error.
  set(fuzz_sanitizers -fsanitize=address,undefined)
  set(fuzz_compile ${fuzz_sanitizers} -fno-sanitize-recover=all -fno-omit-frame-pointer
                   -fsanitize=fuzzer-no-link)
  set(fuzz_link ${fuzz_sanitizers} -fsanitize=fuzzer)
  add_library(hvd_fuzz_objects OBJECT EXCLUDE_FROM_ALL ${HVD_CORE_SOURCES})
  target_include_directories(hvd_fuzz_objects PUBLIC
    ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  target_compile_options(hvd_fuzz_objects PRIVATE ${HVD_WARNINGS} ${fuzz_compile})
  target_link_libraries(hvd_fuzz_objects PUBLIC PkgConfig::UCX PkgConfig::HWLOC
                                                Threads::Threads)
  add_library(hvd_fuzz_lib STATIC EXCLUDE_FROM_ALL $<TARGET_OBJECTS:hvd_fuzz_objects>)
  target_link_libraries(hvd_fuzz_lib PUBLIC hvd_fuzz_objects)
  set(fuzz_lib hvd_fuzz_lib)
endif()

set(HVD_FUZZ_CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
set(HVD_FUZZ_TARGETS)
file(GLOB fuzz_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_*.cc)
foreach(src ${fuzz_sources})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" corpus ${name})
  if(HVD_FUZZ_LIBFUZZER)
    add_executable(${name} ${src})
  else()
    add_executable(${name} ${src} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/standalone_driver.cc)
  endif()
  target_link_libraries(${name} PRIVATE ${fuzz_lib})
  target_compile_options(${name} PRIVATE ${HVD_WARNINGS} ${fuzz_compile})
  target_link_options(${name} PRIVATE ${fuzz_link})
  list(APPEND HVD_FUZZ_TARGETS ${name})
  if(NOT HVD_FUZZ_LIBFUZZER)
    add_test(NAME fuzz.${corpus}
      COMMAND ${name} -artifact_dir=${CMAKE_CURRENT_BINARY_DIR} ${HVD_FUZZ_SECONDS}
              ${HVD_FUZZ_CORPUS}/${corpus})
    set_tests_properties(fuzz.${corpus} PROPERTIES LABELS fuzz TIMEOUT 300)
  endif()
endforeach()
add_custom_target(hvd_fuzz_targets DEPENDS ${HVD_FUZZ_TARGETS})

# Writes the seed corpora from the library's own encoders (tests/fuzz/corpus was made by it).
add_executable(fuzz_make_corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/make_corpus.cc)
target_link_libraries(fuzz_make_corpus PRIVATE hvd_internal)
target_compile_options(fuzz_make_corpus PRIVATE ${HVD_WARNINGS})
add_test(NAME fuzz.corpus_current
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/check_corpus.sh $<TARGET_FILE:fuzz_make_corpus>
          ${HVD_FUZZ_CORPUS})
set_tests_properties(fuzz.corpus_current PROPERTIES LABELS fuzz TIMEOUT 60)
