// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/pmi1_wire.h"

#include <sstream>

#include "bootstrap/hex.h"

namespace hvd::bootstrap {

std::string pmi1_line(const std::string &cmd,
                      const std::vector<std::pair<std::string, std::string>> &fields) {
    std::string line = "cmd=" + cmd;
    for (const auto &[key, value] : fields)
        line += " " + key + "=" + value;
    return line + "\n";
}

bool pmi1_parse(const std::string &line, std::map<std::string, std::string> *fields) {
    fields->clear();
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
        const size_t eq = word.find('=');
        if (eq == std::string::npos || eq == 0) return false;
        (*fields)[word.substr(0, eq)] = word.substr(eq + 1);
    }
    return fields->count("cmd") == 1;
}

std::string pmi1_value_text(const std::string &bytes) {
    return to_hex(bytes.data(), bytes.size());
}

bool pmi1_value_bytes(const std::string &value, std::string *bytes) {
    return from_hex(value, bytes);
}

}  // namespace hvd::bootstrap
