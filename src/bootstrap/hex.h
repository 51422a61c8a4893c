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

}  // namespace hvd::bootstrap
