// SPDX-License-Identifier: Apache-2.0
// Force-included into every C++ unit test (see tests/CMakeLists.txt): cmocka 1.1's header
// has no extern "C" guard, so C++ tests would reference mangled names. Including it here
// first, with C linkage, makes each test's own #include <cmocka.h> a no-op.
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}
