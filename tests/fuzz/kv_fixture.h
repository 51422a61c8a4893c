// SPDX-License-Identifier: Apache-2.0
// The fixed secret and nonces of the rendezvous fuzz target's two sides, shared with the seed
// generator so that the seeds hold handshakes whose proofs check out (and the fuzzer reaches
// the frames after authentication).
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/kv_protocol.h"

namespace fuzz {

inline const std::string kKvSecret = "fuzz-job-secret";
inline const std::string kKvServerNonce(hvd::bootstrap::kNonceBytes, 's');
inline const std::string kKvClientNonce(hvd::bootstrap::kNonceBytes, 'c');
constexpr int32_t kKvRank = 1;
constexpr int32_t kKvSize = 4;

}  // namespace fuzz
