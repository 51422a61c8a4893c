// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/kv_auth.h"

#include <cstring>

#include "bootstrap/hmac.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/secret.h"

namespace hvd::bootstrap {

Sha256Digest client_proof(const std::string &secret, const std::string &server_nonce, int32_t rank,
                          int32_t size) {
    std::string msg = "hvd-kv client";
    msg += server_nonce;
    msg += encode_u32(static_cast<uint32_t>(rank));
    msg += encode_u32(static_cast<uint32_t>(size));
    return hmac_sha256(secret, msg);
}

Sha256Digest server_proof(const std::string &secret, const std::string &client_nonce,
                          const std::string &server_nonce) {
    std::string msg = "hvd-kv server";
    msg += client_nonce;
    msg += server_nonce;
    return hmac_sha256(secret, msg);
}

bool proof_matches(const std::string &field, const Sha256Digest &expected) {
    if (field.size() != expected.size()) return false;
    Sha256Digest got;
    std::memcpy(got.data(), field.data(), got.size());
    return digest_equal(got, expected);
}

std::string new_nonce() {
    std::string nonce(kNonceBytes, '\0');
    random_bytes(&nonce[0], nonce.size());
    return nonce;
}

}  // namespace hvd::bootstrap
