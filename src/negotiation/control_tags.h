// SPDX-License-Identifier: Apache-2.0
// The engine's control messages: they travel on the control channel of set 0, and the
// sequence field of the tag says which kind a message is.
#pragma once

#include <cstdint>

#include "transport/transport.h"

namespace hvd::negotiation {

constexpr uint32_t kReadyMessage = 1;     // worker -> coordinator: ops ready on the sender
constexpr uint32_t kResponseMessage = 2;  // coordinator -> worker: a ResponseBatch
constexpr uint32_t kTuneMessage = 3;      // coordinator -> worker: autotuned parameters
constexpr uint32_t kVoteMessage = 4;      // a cache round vote (cache_round.h says to whom)
constexpr uint32_t kOutcomeMessage = 5;   // coordinator -> worker: a relayed round's outcome
constexpr int32_t kCoordinator = 0;

inline uint64_t control_tag(int32_t source, uint32_t kind) {
    return transport::make_tag(transport::Channel::kControl, 0, source, kind);
}

}  // namespace hvd::negotiation
