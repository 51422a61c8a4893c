// SPDX-License-Identifier: Apache-2.0
#include "settings_markdown.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config/settings.h"

namespace hvd::settings_table {

using config::OutOfRange;
using config::Section;
using config::SettingInfo;
using config::Type;

const char *const kBegin =
    "<!-- settings table: generated from src/config/settings.cc by tools/settings_table; "
    "rewrite with `cmake --build build --target hvd_settings_readme_update` -->";
const char *const kEnd = "<!-- end of settings table -->";

namespace {

std::string integer(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return buf;
}

// v in its unit: "262144 (256 KiB)" for a whole number of KiB, MiB, GiB or TiB; "2.5".
std::string number(const SettingInfo &row, double v) {
    if (row.type == Type::kDouble && v != std::floor(v)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        return buf;
    }
    std::string text = integer(v);
    if (std::string(row.unit) != "bytes" || v < 1024) return text;
    static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
    double scaled = v;
    int unit = -1;
    while (unit < 3 && std::fmod(scaled, 1024.0) == 0 && scaled >= 1024) {
        scaled /= 1024;
        ++unit;
    }
    if (unit < 0) return text;
    return text + " (" + integer(scaled) + " " + kUnits[unit] + ")";
}

std::string type_cell(const SettingInfo &row) {
    static const char *const kTypes[] = {"int", "double", "bool", "string", "enum"};
    std::string text = kTypes[static_cast<int>(row.type)];
    if (*row.unit) text += std::string(", ") + row.unit;
    return text;
}

std::string default_cell(const SettingInfo &row) {
    switch (row.type) {
        case Type::kInt:
        case Type::kDouble:
            if (row.section == Section::kLaunch) return "-";  // the launcher's
            return number(row, row.default_number);
        case Type::kBool:
            return row.default_number != 0 ? "1" : "0";
        case Type::kString:
        case Type::kEnum:
            return row.default_string ? std::string("`") + row.default_string + "`" : "unset";
    }
    return "";
}

std::string range_cell(const SettingInfo &row) {
    switch (row.type) {
        case Type::kInt:
        case Type::kDouble: {
            const bool low = row.min > -config::kUnbounded, high = row.max < config::kUnbounded;
            std::string text;
            if (low && high)
                text = number(row, row.min) + " to " + number(row, row.max);
            else if (low)
                text = ">= " + number(row, row.min);
            else if (high)
                text = "<= " + number(row, row.max);
            else
                return "any";
            if (row.section == Section::kLaunch) return text;
            return text + (row.out_of_range == OutOfRange::kClamp ? ", else the nearest bound"
                                                                  : ", else the default");
        }
        case Type::kBool:
            return "0, 1";
        case Type::kEnum: {
            std::string text;
            for (const char *c = row.values; *c; ++c)
                text += *c == '|' ? std::string("`, `") : std::string(1, *c);
            return "`" + text + "`";
        }
        case Type::kString:
            return "";
    }
    return "";
}

std::string row_line(const SettingInfo &row) {
    std::string name = std::string("`HVD_") + row.name + "`";
    if (row.horovod_alias) name += std::string(" `HOROVOD_") + row.name + "`";
    std::string description = row.description;
    if (row.config_key_name)
        description += std::string(" At run time: `") + row.config_key_name + "`.";
    return "| " + name + " | " + type_cell(row) + " | " + default_cell(row) + " | " +
           range_cell(row) + " | " + description + " |\n";
}

std::string table(Section section) {
    std::string text =
        "| variable | type, unit | default | range | description |\n"
        "|---|---|---|---|---|\n";
    size_t n = 0;
    const SettingInfo *rows = config::all_settings(&n);
    for (size_t i = 0; i < n; ++i)
        if (rows[i].section == section) text += row_line(rows[i]);
    return text;
}

}  // namespace

std::string markdown_block() {
    return std::string(kBegin) + "\n\n" + table(Section::kTuning) +
           "\nSet by `hvdrun` (or by hand, or read from another launcher's variables: see "
           "Launching):\n\n" +
           table(Section::kLaunch) + "\n" + kEnd + "\n";
}

bool find_block(const std::string &text, size_t *begin, size_t *end) {
    size_t b = text.find(kBegin);
    size_t e = text.find(kEnd);
    if (b == std::string::npos || e == std::string::npos || e < b) return false;
    if (text.find(kBegin, b + 1) != std::string::npos) return false;
    if (text.find(kEnd, e + 1) != std::string::npos) return false;
    e += std::string(kEnd).size();
    if (e < text.size() && text[e] == '\n') ++e;
    *begin = b;
    *end = e;
    return true;
}

}  // namespace hvd::settings_table
