# SPDX-License-Identifier: Apache-2.0
# Chaos: jobs in which one process is killed, stopped, or loses its launcher at a random moment
# (scripts/chaos.py drives them). ctest runs a few; `scripts/chaos.py --runs 100` runs many.
add_executable(chaos_worker ${CMAKE_CURRENT_SOURCE_DIR}/chaos/chaos_worker.c
                            ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_check.c)
target_include_directories(chaos_worker PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/mp)
target_link_libraries(chaos_worker PRIVATE hvd PkgConfig::CMOCKA m)
target_compile_options(chaos_worker PRIVATE ${HVD_WARNINGS})

find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME chaos.smoke
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/chaos.py --runs 6 --seed 7
            --build ${PROJECT_BINARY_DIR} --op-timeout 4)
  set_tests_properties(chaos.smoke PROPERTIES LABELS "chaos;mp" TIMEOUT 300 PROCESSORS 2)
endif()
