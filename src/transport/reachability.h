// SPDX-License-Identifier: Apache-2.0
// The check at init that every peer answers over the transport, so that a host another cannot
// reach fails hvd_init naming both ends, instead of the first collective waiting on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "transport/transport.h"

namespace hvd::transport {

struct Unreachable {
    int32_t peer;
    bool reported;       // the transport reported it unreachable; false: no answer in time
    std::string reason;  // the transport's words, when it has some
};

// Sends one byte to every other rank and receives one from each (tags of Channel::kReach),
// until all arrived or `deadline`. Returns the peers not heard from or not reached, in rank
// order; empty when every peer answered. On a non-empty result the transport's operations are
// aborted (abort_all) before returning. Every rank of the job must call it, before the engine
// sends anything.
std::vector<Unreachable> unreachable_peers(Transport &t, const Deadline &deadline);

}  // namespace hvd::transport
