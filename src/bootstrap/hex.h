// SPDX-License-Identifier: Apache-2.0
// Lower-case hexadecimal encoding of bytes, for secrets and digests that travel as text
// (environment variables, the rendezvous file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd::bootstrap {

inline std::string to_hex(const void *data, size_t len) {
    static const char kDigits[] = "0123456789abcdef";
    const auto *bytes = static_cast<const uint8_t *>(data);
    std::string out(2 * len, '0');
    for (size_t i = 0; i < len; ++i) {
        out[2 * i] = kDigits[bytes[i] >> 4];
        out[2 * i + 1] = kDigits[bytes[i] & 0xf];
    }
    return out;
}

// The bytes of to_hex's text. False (out unspecified) if hex has an odd length or a character
// other than 0-9 and a-f.
inline bool from_hex(const std::string &hex, std::string *out) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (hex.size() % 2 != 0) return false;
    out->assign(hex.size() / 2, '\0');
    for (size_t i = 0; i < out->size(); ++i) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        (*out)[i] = static_cast<char>(hi << 4 | lo);
    }
    return true;
}

}  // namespace hvd::bootstrap
