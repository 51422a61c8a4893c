// SPDX-License-Identifier: Apache-2.0
#include "numbers.h"

#include <cmath>
#include <cstdlib>

namespace hvdrun {

bool parse_whole(const std::string &text, long long lo, long long hi, long long *out) {
    if (text.empty() || text.size() > 18) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    long long v = std::atoll(text.c_str());
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool parse_decimal(const std::string &text, double max, double *out) {
    if (text.empty()) return false;
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v) || v < 0 || v > max) return false;
    *out = v;
    return true;
}

}  // namespace hvdrun
