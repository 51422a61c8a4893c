// SPDX-License-Identifier: Apache-2.0
#include "config/read.h"

#include <strings.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/env.h"

namespace hvd::config {

namespace {

void warn_ignored(const SettingInfo &row, const char *value, const char *why) {
    std::fprintf(stderr, "[hvd] warning: ignoring HVD_%s=%s (%s)\n", row.name, value, why);
}

// v inside the row's range, or what its OutOfRange policy makes of it.
double within_range(const SettingInfo &row, double v, double dflt) {
    if (v >= row.min && v <= row.max) return v;
    if (row.out_of_range == OutOfRange::kDefault) return dflt;
    return v < row.min ? row.min : row.max;
}

}  // namespace

const char *env_value(Setting s) {
    const SettingInfo &row = info(s);
    std::string name = std::string("HVD_") + row.name;
    if (const char *v = env_get(name.c_str())) return v;
    if (!row.horovod_alias) return nullptr;
    name = std::string("HOROVOD_") + row.name;
    return env_get(name.c_str());
}

int64_t get_int(Setting s) {
    return get_int(s, static_cast<int64_t>(info(s).default_number));
}

int64_t get_int(Setting s, int64_t dflt) {
    const SettingInfo &row = info(s);
    const char *v = env_value(s);
    if (!v) return dflt;
    errno = 0;
    char *end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0') {
        warn_ignored(row, v, "not an integer");
        return dflt;
    }
    // The bounds are whole numbers below 2^53, so comparing as doubles is exact for them.
    if (static_cast<double>(x) < row.min)
        return row.out_of_range == OutOfRange::kDefault ? dflt : static_cast<int64_t>(row.min);
    if (static_cast<double>(x) > row.max)
        return row.out_of_range == OutOfRange::kDefault ? dflt : static_cast<int64_t>(row.max);
    return static_cast<int64_t>(x);
}

double get_double(Setting s) {
    const SettingInfo &row = info(s);
    const double dflt = row.default_number;
    const char *v = env_value(s);
    if (!v) return dflt;
    errno = 0;
    char *end = nullptr;
    double x = std::strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0') {
        warn_ignored(row, v, "not a number");
        return dflt;
    }
    if (std::isnan(x)) return dflt;
    return within_range(row, x, dflt);
}

bool get_bool(Setting s) {
    return get_bool(s, info(s).default_number != 0);
}

bool parse_bool(const char *text, bool *value) {
    if (!std::strcmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") ||
        !strcasecmp(text, "on")) {
        *value = true;
        return true;
    }
    if (!std::strcmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") ||
        !strcasecmp(text, "off")) {
        *value = false;
        return true;
    }
    return false;
}

bool get_bool(Setting s, bool dflt) {
    const char *v = env_value(s);
    if (!v) return dflt;
    bool value = dflt;
    if (parse_bool(v, &value)) return value;
    warn_ignored(info(s), v, "not a boolean");
    return dflt;
}

const char *get_string(Setting s) {
    const char *v = env_value(s);
    return v != nullptr ? v : info(s).default_string;
}

}  // namespace hvd::config
