// SPDX-License-Identifier: Apache-2.0
// SHA-256 as defined in FIPS 180-4. Used for HMAC-SHA256 (rendezvous authentication) and for
// deriving stable names and fallback secrets; written here so libhvd needs no crypto library.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hvd::bootstrap {

constexpr size_t kSha256Bytes = 32;
constexpr size_t kSha256BlockBytes = 64;
using Sha256Digest = std::array<uint8_t, kSha256Bytes>;

// Incremental hasher: update() any number of times, then finish() once.
class Sha256 {
  public:
    Sha256();
    void update(const void *data, size_t len);
    void update(std::string_view data) { update(data.data(), data.size()); }
    // Pads, processes the last block(s) and returns the digest. The object is spent afterwards.
    Sha256Digest finish();

  private:
    void compress(const uint8_t *block);

    std::array<uint32_t, 8> state_;
    std::array<uint8_t, kSha256BlockBytes> block_{};
    size_t block_len_ = 0;      // bytes buffered in block_
    uint64_t total_bytes_ = 0;  // message length so far
};

Sha256Digest sha256(std::string_view data);
// The digest as 64 lower-case hex characters.
std::string sha256_hex(std::string_view data);

}  // namespace hvd::bootstrap
