// SPDX-License-Identifier: Apache-2.0
// Numbers on hvdrun's command line and in its config file, checked before use.
#pragma once

#include <string>

namespace hvdrun {

// Decimal digits only (no sign, no blanks), at most 18 of them, with lo <= value <= hi.
bool parse_whole(const std::string &text, long long lo, long long hi, long long *out);

// A finite decimal number ("5", "0.5", "1e3") with 0 <= value <= max.
bool parse_decimal(const std::string &text, double max, double *out);

}  // namespace hvdrun
