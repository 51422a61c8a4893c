# SPDX-License-Identifier: Apache-2.0
# ABI guard (label abi), besides abi.exports in tests/CMakeLists.txt: the layout of the public
# structs and constants as a C compiler sees them, debian/libhvd1.symbols, and abidiff against
# the committed abidw baseline abi/libhvd.so.<HVD_ABI_VERSION>.abi. Included from
# tests/CMakeLists.txt.
set(HVD_ABI_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# Compiled as C: the header's layout as C callers (and C-declared bindings) see it.
add_executable(test_struct_layout ${HVD_ABI_TEST_DIR}/test_struct_layout.c)
target_include_directories(test_struct_layout PRIVATE
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
target_link_libraries(test_struct_layout PRIVATE PkgConfig::CMOCKA)
target_compile_options(test_struct_layout PRIVATE ${HVD_WARNINGS})
add_test(NAME abi.struct_layout COMMAND test_struct_layout)
set_tests_properties(abi.struct_layout PROPERTIES LABELS abi SKIP_RETURN_CODE 77 TIMEOUT 30)

# debian/libhvd1.symbols, which the Debian package build checks strictly, kept exact here too.
set(HVD_SYMBOLS_ARGS $<TARGET_FILE:hvd> ${PROJECT_SOURCE_DIR}/debian/libhvd1.symbols
    ${PROJECT_VERSION})
add_test(NAME abi.debian_symbols
  COMMAND bash ${HVD_ABI_TEST_DIR}/debian_symbols.sh check ${HVD_SYMBOLS_ARGS})
set_tests_properties(abi.debian_symbols PROPERTIES LABELS abi TIMEOUT 60)

# The baseline is x86-64's DWARF view of the public headers; other targets would differ in
# pointer sizes and architecture, not in what the check is for.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  set(HVD_ABI_BASELINE ${PROJECT_SOURCE_DIR}/abi/libhvd.so.${HVD_ABI_VERSION}.abi)
  set(HVD_ABI_ARGS $<TARGET_FILE:hvd> ${HVD_ABI_BASELINE} ${PROJECT_SOURCE_DIR}
      ${PROJECT_SOURCE_DIR}/include/hvd ${PROJECT_BINARY_DIR}/include/hvd)
  add_test(NAME abi.abidiff COMMAND bash ${HVD_ABI_TEST_DIR}/check_abi.sh check ${HVD_ABI_ARGS})
  set_tests_properties(abi.abidiff PROPERTIES LABELS abi SKIP_RETURN_CODE 77 TIMEOUT 120)
  # Deliberate ABI changes only: rewrites the committed baseline and debian/libhvd1.symbols
  # from the built library (see check_abi.sh).
  add_custom_target(hvd_abi_update
    COMMAND bash ${HVD_ABI_TEST_DIR}/check_abi.sh update ${HVD_ABI_ARGS}
    COMMAND bash ${HVD_ABI_TEST_DIR}/debian_symbols.sh update ${HVD_SYMBOLS_ARGS}
    DEPENDS hvd VERBATIM)
endif()
