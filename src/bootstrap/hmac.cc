// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/hmac.h"

#include <cstring>

namespace hvd::bootstrap {

// RFC 2104: H((K ^ opad) || H((K ^ ipad) || message)), where a key longer than the block is
// first replaced by its hash and a shorter one is zero-padded to the block size.
HmacSha256::HmacSha256(std::string_view key) {
    if (key.size() > kSha256BlockBytes) {
        Sha256Digest hashed = sha256(key);
        std::memcpy(block_key_, hashed.data(), hashed.size());
    } else {
        std::memcpy(block_key_, key.data(), key.size());
    }
    uint8_t pad[kSha256BlockBytes];
    for (size_t i = 0; i < kSha256BlockBytes; ++i)
        pad[i] = block_key_[i] ^ 0x36;
    inner_.update(pad, sizeof pad);
}

Sha256Digest HmacSha256::finish() {
    Sha256Digest inner_digest = inner_.finish();
    uint8_t pad[kSha256BlockBytes];
    for (size_t i = 0; i < kSha256BlockBytes; ++i)
        pad[i] = block_key_[i] ^ 0x5c;
    Sha256 outer;
    outer.update(pad, sizeof pad);
    outer.update(inner_digest.data(), inner_digest.size());
    return outer.finish();
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
    HmacSha256 mac(key);
    mac.update(message);
    return mac.finish();
}

bool digest_equal(const Sha256Digest &a, const Sha256Digest &b) {
    uint8_t diff = 0;
    for (size_t i = 0; i < a.size(); ++i)
        diff |= static_cast<uint8_t>(a[i] ^ b[i]);
    return diff == 0;
}

}  // namespace hvd::bootstrap
