# SPDX-License-Identifier: Apache-2.0
# HVD_SANITIZE: build the library, its tools and its tests under a sanitizer.
#   address  AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer (with
#            float-cast-overflow); undefined behaviour aborts the process, so it fails the
#            test that hit it
#   thread   ThreadSanitizer
# The tests get the sanitizers' options and the suppressions of tests/sanitizers/ (third-party
# code only) through hvd_sanitizer_test_env().
set(HVD_SANITIZE "" CACHE STRING "Sanitizer build: empty (none), address (ASan+UBSan) or thread (TSan)")
set_property(CACHE HVD_SANITIZE PROPERTY STRINGS "" address thread)

if(HVD_SANITIZE STREQUAL "address")
  # float-cast-overflow (a float converted to an integer type that cannot hold it) is not
  # part of GCC's "undefined"; the scaling of integer tensors converts that way.
  set(HVD_SANITIZE_FLAGS -fsanitize=address,undefined,float-cast-overflow
                         -fno-sanitize-recover=undefined,float-cast-overflow)
elseif(HVD_SANITIZE STREQUAL "thread")
  set(HVD_SANITIZE_FLAGS -fsanitize=thread)
elseif(NOT HVD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "HVD_SANITIZE must be empty, address or thread, not '${HVD_SANITIZE}'")
endif()
if(HVD_SANITIZE_FLAGS)
  list(APPEND HVD_SANITIZE_FLAGS -fno-omit-frame-pointer)
  add_compile_options(${HVD_SANITIZE_FLAGS})
  add_link_options(${HVD_SANITIZE_FLAGS})
  # GCC's flow analysis sees the sanitizers' checks as paths that skip an initialisation
  # (its manual warns of false positives with -fsanitize); plain builds keep this warning.
  list(APPEND HVD_WARNINGS -Wno-maybe-uninitialized)
  message(STATUS "libhvd: sanitized build (${HVD_SANITIZE}): ${HVD_SANITIZE_FLAGS}")
endif()

# Gives every test of the calling directory the sanitizer's options: its suppressions file
# (third-party code only) and a failure on any report, also for tests that pass on a matching
# output (their exit code alone would not fail them).
function(hvd_sanitizer_test_env)
  if(NOT HVD_SANITIZE_FLAGS)
    return()
  endif()
  set(supp ${PROJECT_SOURCE_DIR}/tests/sanitizers)
  # UCX's memory hooks (libucm) patch malloc and mmap (in relocation tables, or in the code
  # itself with "bistro") for the registration caches of RDMA and GPU transports; the
  # sanitizers intercept the same functions, and allocations through patched entry points
  # would escape them. Shared memory and TCP never install the hooks; these settings keep
  # them off on hosts where UCX would, at the cost of its registration cache.
  set(ucx_env "UCX_MEM_MALLOC_HOOKS=no" "UCX_MEM_MMAP_HOOK_MODE=none")
  if(HVD_SANITIZE STREQUAL "address")
    set(env
      "ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
      "LSAN_OPTIONS=suppressions=${supp}/lsan.supp:print_suppressions=0"
      "UBSAN_OPTIONS=suppressions=${supp}/ubsan.supp:print_stacktrace=1:halt_on_error=1"
      ${ucx_env})
  else()
    set(env
      "TSAN_OPTIONS=suppressions=${supp}/tsan.supp:print_suppressions=0:halt_on_error=1:second_deadlock_stack=1"
      ${ucx_env})
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t ${tests})
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ${env})
    set_property(TEST ${t} APPEND PROPERTY FAIL_REGULAR_EXPRESSION
      "ERROR: AddressSanitizer" "ERROR: LeakSanitizer" "runtime error: "
      "WARNING: ThreadSanitizer")
  endforeach()
endfunction()
