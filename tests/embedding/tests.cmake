# SPDX-License-Identifier: Apache-2.0
# libhvd inside a host process that handles fault signals itself (a JVM, Julia): loading it
# must leave the process's handlers of SIGILL, SIGSEGV, SIGBUS and SIGFPE in place, unless
# the user asks UCX for its own error handling (the control).
add_executable(signals_after_load ${CMAKE_CURRENT_LIST_DIR}/signals_after_load.c)
target_include_directories(signals_after_load PRIVATE ${PROJECT_SOURCE_DIR}/include
                           ${PROJECT_BINARY_DIR}/include)
target_link_libraries(signals_after_load PRIVATE ${CMAKE_DL_LIBS})
target_compile_options(signals_after_load PRIVATE ${HVD_WARNINGS})
add_dependencies(signals_after_load hvd)
set(HVD_SIGNAL_TEST_ENV "HVD_RANK=0;HVD_SIZE=1;HVD_JOB_ID=signals-after-load")
add_test(NAME embedding.signals_kept
  COMMAND signals_after_load $<TARGET_FILE:hvd> kept)
add_test(NAME embedding.signals_ucx_control
  COMMAND signals_after_load $<TARGET_FILE:hvd> ucx)
set_tests_properties(embedding.signals_kept PROPERTIES LABELS embedding TIMEOUT 60
  ENVIRONMENT "${HVD_SIGNAL_TEST_ENV}")
set_tests_properties(embedding.signals_ucx_control PROPERTIES LABELS embedding TIMEOUT 60
  ENVIRONMENT "${HVD_SIGNAL_TEST_ENV};UCX_ERROR_SIGNALS=ILL,SEGV,BUS,FPE")
