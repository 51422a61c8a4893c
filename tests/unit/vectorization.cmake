# SPDX-License-Identifier: Apache-2.0
# unit.reduce_vectorized: proves that GCC auto-vectorises the hot reduction loops in
# src/reduce/reduce_kernels.cc (float32 and int32 sum, float32 sum stored twice, fp16/bf16
# sum through float, float32 min/max). A plain -fopt-info report names only source lines,
# and the loop templates are shared by every dtype, so the check reads GCC's vectorizer dump
# instead: it is split per function, and each kernel instantiation is a separate function
# there.
#
# This file has two roles:
#   include()d from tests/CMakeLists.txt  -> registers the test;
#   run with cmake -P (by that test)       -> compiles the kernels and checks the dump.

if(NOT CMAKE_SCRIPT_MODE_FILE)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    get_filename_component(kernels ${CMAKE_CURRENT_LIST_DIR}/../../src/reduce/reduce_kernels.cc
                           ABSOLUTE)
    # The flags the library's objects get (reduce_kernels.cc then adds -O3, as here).
    string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
    set(config_flags "${CMAKE_CXX_FLAGS_${config}}")
    add_test(NAME unit.reduce_vectorized
      COMMAND ${CMAKE_COMMAND}
        -DCXX=${CMAKE_CXX_COMPILER}
        "-DCXX_FLAGS=${CMAKE_CXX_FLAGS} ${config_flags} ${CMAKE_CXX_COMPILE_OPTIONS_PIC}"
        -DSOURCE=${kernels}
        "-DINCLUDE_DIRS=$<JOIN:$<TARGET_PROPERTY:hvd_objects,INCLUDE_DIRECTORIES>,|>"
        -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/reduce_vectorized
        -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(unit.reduce_vectorized PROPERTIES LABELS unit TIMEOUT 120)
  else()
    message(STATUS "unit.reduce_vectorized needs GCC's vectorizer dump; "
                   "not registered for ${CMAKE_CXX_COMPILER_ID}")
  endif()
  return()
endif()

# ---------------------------------------------------------------- script mode

foreach(var CXX SOURCE INCLUDE_DIRS WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "vectorization.cmake: -D${var}=... is required")
  endif()
endforeach()

file(MAKE_DIRECTORY ${WORK_DIR})
set(dump ${WORK_DIR}/vect.txt)
file(REMOVE ${dump})

string(REPLACE "|" ";" include_dirs "${INCLUDE_DIRS}")
set(include_flags)
foreach(dir IN LISTS include_dirs)
  list(APPEND include_flags -I${dir})
endforeach()
separate_arguments(extra_flags UNIX_COMMAND "${CXX_FLAGS}")

# The same optimisation level the build gives this file (src/CMakeLists.txt: -O3).
execute_process(
  COMMAND ${CXX} ${extra_flags} -std=c++17 -O3 ${include_flags}
          -fdump-tree-vect-optimized=${dump} -c ${SOURCE} -o ${WORK_DIR}/reduce_kernels.o
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SOURCE} failed (${rc}):\n${out}")
endif()

if(NOT EXISTS ${dump})
  message(FATAL_ERROR "GCC wrote no vectorizer dump (is vectorisation disabled by CXX_FLAGS "
                      "'${CXX_FLAGS}'?):\n${out}")
endif()

# Keep the function headers (";; Function <name> (<mangled>...") and the vectorised-loop notes.
# file(STRINGS) escapes the semicolons, so each line stays one list item.
file(STRINGS ${dump} lines REGEX "^;; Function |loop vectorized")

# Distinct source lines of the loops vectorised in functions whose name matches any of the
# given regexes; the result goes to the variable named by `out_var`.
function(vectorized_loops out_var)
  set(current "")
  set(found)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[^A-Za-z]*Function ([^(]*)")
      set(current "${CMAKE_MATCH_1}")
    elseif(line MATCHES "([A-Za-z0-9_.]+:[0-9]+):[0-9]+: optimized: loop vectorized")
      set(loop "${CMAKE_MATCH_1}")
      foreach(pattern IN LISTS ARGN)
        if(current MATCHES "${pattern}")
          list(APPEND found "${loop}")
        endif()
      endforeach()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES found)
  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()

set(failures "")
# expect_vectorized(<what> <min loops> <function regex>...)
function(expect_vectorized what min_loops)
  vectorized_loops(found ${ARGN})
  list(LENGTH found count)
  if(count LESS min_loops)
    set(failures "${failures}\n  ${what}: ${count} of ${min_loops} loops vectorised (${found})"
        PARENT_SCOPE)
  else()
    message(STATUS "${what}: vectorised loops at ${found}")
  endif()
endfunction()

set(ns "hvd::reduce::{anonymous}::")
# combine (out = a op b), accumulate (acc op= x) and self_combine (x op x).
expect_vectorized("float32 sum" 3 "reduce_typed<${ns}SumOp, float>")
expect_vectorized("int32 sum" 3 "reduce_typed<${ns}SumOp, int>")
# The one-pass store of reduce_into_twice: its block's reduction (the stores are memcpy), a
# loop of its own besides reduce_typed's (which reduce_typed_twice calls for short arrays and
# the inliner may copy in).
vectorized_loops(twice_loops "reduce_typed_twice<${ns}SumOp, float>" "combine_twice<${ns}SumOp, float>")
vectorized_loops(typed_loops "reduce_typed<${ns}SumOp, float>")
if(twice_loops)
  list(REMOVE_ITEM twice_loops ${typed_loops})
endif()
if(NOT twice_loops)
  set(failures "${failures}\n  float32 sum, stored twice: its block loop is not vectorised")
else()
  message(STATUS "float32 sum, stored twice: vectorised loops at ${twice_loops}")
endif()
# x op x is x for min/max, so only two loops remain.
expect_vectorized("float32 min" 2 "reduce_typed<${ns}MinOp, float>")
expect_vectorized("float32 max" 2 "reduce_typed<${ns}MaxOp, float>")
# widen to float, accumulate in float, round to 16 bits, pack (wherever the inliner put them).
expect_vectorized("float16 sum" 4 "reduce_half<${ns}SumOp, ${ns}Fp16Codec>"
                  "widen_block<${ns}Fp16Codec>" "narrow_block<${ns}Fp16Codec>")
expect_vectorized("bfloat16 sum" 4 "reduce_half<${ns}SumOp, ${ns}Bf16Codec>"
                  "widen_block<${ns}Bf16Codec>" "narrow_block<${ns}Bf16Codec>")

if(failures)
  message(FATAL_ERROR "reduction kernels are no longer auto-vectorised:${failures}\n"
                      "GCC's notes are in ${dump}")
endif()
