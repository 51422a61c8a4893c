// SPDX-License-Identifier: Apache-2.0
// assert_contains(text, needle): fails the running cmocka test, quoting both, unless `text`
// contains `needle`. For checking that an error message names what went wrong.
#pragma once

#include <string>

inline void assert_contains(const std::string &text, const std::string &needle) {
    if (text.find(needle) == std::string::npos)
        fail_msg("'%s' does not contain '%s'", text.c_str(), needle.c_str());
}
