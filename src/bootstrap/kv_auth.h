// SPDX-License-Identifier: Apache-2.0
// The rendezvous handshake's proofs. Each side proves it knows the job secret by MACing the
// other side's fresh nonce, so a recorded exchange cannot be replayed and the secret itself
// never crosses the wire. The proofs are domain-separated ("client"/"server") so that one
// side's proof can never be reflected back as the other's.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/sha256.h"

namespace hvd::bootstrap {

// HMAC(secret, "hvd-kv client" | nonce_s | rank u32 | size u32): binds the claimed rank and size.
Sha256Digest client_proof(const std::string &secret, const std::string &server_nonce, int32_t rank,
                          int32_t size);

// HMAC(secret, "hvd-kv server" | nonce_c | nonce_s).
Sha256Digest server_proof(const std::string &secret, const std::string &client_nonce,
                          const std::string &server_nonce);

// A proof as received in a frame field against the expected one (constant time; a field of
// the wrong length is simply unequal).
bool proof_matches(const std::string &field, const Sha256Digest &expected);

inline std::string proof_field(const Sha256Digest &d) {
    return std::string(reinterpret_cast<const char *>(d.data()), d.size());
}

// A fresh kNonceBytes random nonce.
std::string new_nonce();

}  // namespace hvd::bootstrap
