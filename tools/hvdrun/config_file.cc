// SPDX-License-Identifier: Apache-2.0
#include "config_file.h"

#include <fstream>
#include <sstream>

#include "tuning.h"

namespace hvdrun {
namespace {

std::string trim(const std::string &s) {
    size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

// The line without its comment: a '#' at its start or after a blank, outside quotes.
std::string strip_comment(const std::string &line) {
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (quote != 0) {
            if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
            return line.substr(0, i);
        }
    }
    return line;
}

// A scalar's text: quotes removed ('' inside single quotes is one quote). False if a quote
// is not closed or text follows it.
bool unquote(const std::string &raw, std::string *out) {
    if (raw.empty() || (raw[0] != '\'' && raw[0] != '"')) {
        *out = raw;
        return true;
    }
    char q = raw[0];
    std::string v;
    size_t i = 1;
    for (; i < raw.size(); ++i) {
        if (raw[i] == q) {
            if (q == '\'' && i + 1 < raw.size() && raw[i + 1] == '\'') {
                v += '\'';
                ++i;
                continue;
            }
            break;
        }
        v += raw[i];
    }
    if (i >= raw.size() || trim(raw.substr(i + 1)) != "") return false;
    *out = v;
    return true;
}

struct Line {
    size_t indent = 0;
    std::string key, value;  // value empty: a section header (or an empty scalar)
};

bool split_line(const std::string &raw, Line *out, std::string *why) {
    size_t indent = raw.find_first_not_of(' ');
    if (raw.find('\t') < raw.find_first_not_of(" \t")) {
        *why = "tabs are not allowed for indentation";
        return false;
    }
    std::string body = trim(raw);
    size_t colon = body.find(':');
    while (colon != std::string::npos && colon + 1 < body.size() && body[colon + 1] != ' ') {
        colon = body.find(':', colon + 1);
    }
    if (colon == std::string::npos || colon == 0) {
        *why = "expected 'key: value' or 'section:'";
        return false;
    }
    out->indent = indent;
    out->key = trim(body.substr(0, colon));
    std::string raw_value = trim(body.substr(colon + 1));
    if (!unquote(raw_value, &out->value)) {
        *why = "unterminated or trailing quote in '" + raw_value + "'";
        return false;
    }
    if (!raw_value.empty() && (raw_value[0] == '[' || raw_value[0] == '{' || raw_value[0] == '|' ||
                               raw_value[0] == '>' || raw_value[0] == '&' || raw_value[0] == '*')) {
        *why = "only plain values are supported, not '" + raw_value + "'";
        return false;
    }
    return true;
}

// Top-level keys of horovodrun's file that are not sections of settings.
bool top_level_no_effect(const std::string &key, std::string *why) {
    if (key == "verbose") {
        *why = "verbose has no effect here: use hvdrun --verbose";
    } else if (key == "controller") {
        *why = "controller has no effect: libhvd's ranks agree over UCX, not MPI or Gloo";
    } else {
        return false;
    }
    return true;
}

}  // namespace

bool parse_config_text(const std::string &text, const std::string &name,
                       std::vector<EnvVar> *settings, std::vector<std::string> *warnings,
                       std::string *err) {
    std::istringstream in(text);
    std::string raw, section, why;
    size_t section_indent = 0;
    int number = 0;
    auto fail = [&](int line, const std::string &what) {
        *err = name + ":" + std::to_string(line) + ": " + what;
        return false;
    };
    while (std::getline(in, raw)) {
        ++number;
        std::string content = strip_comment(raw);
        if (trim(content).empty() || trim(content) == "---") continue;
        Line line;
        if (!split_line(content, &line, &why)) return fail(number, why);
        if (line.indent == 0) {
            section.clear();
            if (!line.value.empty()) {
                if (!top_level_no_effect(line.key, &why)) {
                    return fail(number, "'" + line.key + "' is not a section of settings");
                }
                warnings->push_back(name + ":" + std::to_string(number) + ": " + why);
                continue;
            }
            section = line.key;
            section_indent = 0;
            continue;
        }
        if (section.empty()) return fail(number, "indented line outside a section");
        if (section_indent == 0) section_indent = line.indent;
        if (line.indent != section_indent) return fail(number, "inconsistent indentation");
        if (line.value.empty()) return fail(number, "'" + line.key + "' has no value");
        bool ok = true;
        switch (add_config_entry(section, line.key, line.value, settings, &ok, &why)) {
            case ConfigKey::kSetting:
                if (!ok) return fail(number, why);
                break;
            case ConfigKey::kNoEffect:
                warnings->push_back(name + ":" + std::to_string(number) + ": " + why);
                break;
            case ConfigKey::kUnknown:
                return fail(number, why);
        }
    }
    return true;
}

bool read_config_file(const std::string &path, std::vector<EnvVar> *settings,
                      std::vector<std::string> *warnings, std::string *err) {
    std::ifstream f(path);
    if (!f) {
        *err = "cannot read the config file '" + path + "'";
        return false;
    }
    std::stringstream text;
    text << f.rdbuf();
    return parse_config_text(text.str(), path, settings, warnings, err);
}

}  // namespace hvdrun
