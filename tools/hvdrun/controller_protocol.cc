// SPDX-License-Identifier: Apache-2.0
#include "controller_protocol.h"

#include <sstream>

#include "numbers.h"

namespace hvdrun::controller {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";
constexpr long long kMaxSlots = 1000000;

bool needs_escape(unsigned char c) {
    return c == '%' || c <= ' ' || c == 0x7f;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::vector<std::string> words(const std::string &line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

// "<host>:<slots>" (the host percent-encoded).
bool parse_host(const std::string &word, HostSlots *out, std::string *err) {
    size_t colon = word.rfind(':');
    long long slots = 0;
    if (colon == std::string::npos || colon == 0 ||
        !parse_whole(word.substr(colon + 1), 1, kMaxSlots, &slots) ||
        !decode(word.substr(0, colon), &out->name)) {
        *err = "bad host '" + word + "' (expected host:slots)";
        return false;
    }
    out->slots = static_cast<int>(slots);
    return true;
}

}  // namespace

std::string encode(const std::string &text) {
    std::string out;
    for (char ch : text) {
        auto c = static_cast<unsigned char>(ch);
        if (!needs_escape(c)) {
            out += ch;
            continue;
        }
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
    return out;
}

bool decode(const std::string &text, std::string *out) {
    out->clear();
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            *out += text[i];
            continue;
        }
        int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
        int lo = hi >= 0 ? hex_value(text[i + 2]) : -1;
        if (lo < 0) return false;
        *out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return true;
}

std::string start_line(int id, const std::string &host, const std::vector<EnvVar> &vars) {
    std::string line = "start " + std::to_string(id) + " " + encode(host);
    for (const EnvVar &v : vars)
        line += " " + encode(v.first) + "=" + encode(v.second);
    return line + "\n";
}

std::string stop_line(int id) {
    return "stop " + std::to_string(id) + "\n";
}

std::string failed_line(const std::string &reason) {
    std::string flat = reason;
    for (char &c : flat)
        if (c == '\n' || c == '\r') c = ' ';
    return "failed " + flat + "\n";
}

bool parse_input(const std::string &line, Input *out, std::string *err) {
    std::vector<std::string> w = words(line);
    *out = Input{};
    if (w.empty()) {
        *err = "empty line";
        return false;
    }
    if (w[0] == "stop" && w.size() == 1) return true;
    if (w[0] == "exited") {
        long long id = 0, code = 0;
        if (w.size() != 3 || !parse_whole(w[1], 0, 1LL << 30, &id) ||
            !parse_whole(w[2], 0, 255, &code)) {
            *err = "bad line '" + line + "' (expected: exited <id> <code 0-255>)";
            return false;
        }
        out->kind = Input::kExited;
        out->id = static_cast<int>(id);
        out->code = static_cast<int>(code);
        return true;
    }
    if (w[0] == "hosts") {
        out->kind = Input::kHosts;
        for (size_t i = 1; i < w.size(); ++i) {
            HostSlots h;
            if (!parse_host(w[i], &h, err)) return false;
            out->hosts.push_back(h);
        }
        return true;
    }
    *err = "unknown line '" + line + "' (expected exited, hosts or stop)";
    return false;
}

}  // namespace hvdrun::controller
