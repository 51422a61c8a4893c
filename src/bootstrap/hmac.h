// SPDX-License-Identifier: Apache-2.0
// HMAC-SHA256 (RFC 2104 with SHA-256, test vectors in RFC 4231): the proof of knowing the job
// secret in the rendezvous handshake, and the MAC of every rendezvous frame after it.
#pragma once

#include <string_view>

#include "bootstrap/sha256.h"

namespace hvd::bootstrap {

// Incremental HMAC: update() any number of times, then finish() once (the object is spent).
class HmacSha256 {
  public:
    explicit HmacSha256(std::string_view key);
    void update(std::string_view data) { inner_.update(data); }
    Sha256Digest finish();

  private:
    uint8_t block_key_[kSha256BlockBytes] = {};
    Sha256 inner_;
};

Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

// Compares two digests in time independent of where they differ, so a network peer cannot
// learn a valid MAC byte by byte from response timing.
bool digest_equal(const Sha256Digest &a, const Sha256Digest &b);

}  // namespace hvd::bootstrap
