# SPDX-License-Identifier: Apache-2.0
# Every binding covers every function (label bindings, also abi): the functions, statuses,
# dtypes, ops, field bits and config keys of include/hvd/hvd.h must be reachable from the
# Python ctypes and pybind11 backends, Java and Julia, with the C compiler's values and struct
# layouts. And Hvd.jl's own tests under hvdrun, skipped (saying why) where no julia exists.
find_package(Python3 COMPONENTS Interpreter)
add_test(NAME bindings.coverage
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/bindings/binding_coverage.py
          --root ${PROJECT_SOURCE_DIR} --include-dir ${PROJECT_BINARY_DIR}/include
          --cc ${CMAKE_C_COMPILER})
set_tests_properties(bindings.coverage PROPERTIES LABELS "bindings;abi" TIMEOUT 60)

foreach(np 2 3)
  add_test(NAME julia.runtests.np${np}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/bindings/julia_runtests.sh
            $<TARGET_FILE:hvdrun> ${np} $<TARGET_FILE_DIR:hvd> ${PROJECT_SOURCE_DIR}/bindings/julia/Hvd.jl)
  set_tests_properties(julia.runtests.np${np} PROPERTIES LABELS "bindings;julia" TIMEOUT 300
    SKIP_RETURN_CODE 77 ENVIRONMENT "HVD_OP_TIMEOUT=60;HVD_START_TIMEOUT=60")
endforeach()
