// SPDX-License-Identifier: Apache-2.0
// How the ranks agree on which ops run, and in which one order: the engine hands its
// negotiator the requests that became ready on this rank and takes from it the responses
// every rank agreed on, each with this rank's request. Two implementations:
// CoordinatorNegotiator (Horovod's: every op through rank 0's coordinator) and
// CacheNegotiator (the response cache: ops the job ran before are agreed by one exchange of
// bit-vector votes among the ranks; the rest go through a CoordinatorNegotiator it owns).
// Engine thread (or a caller driving the engine) only.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "config/runtime_config.h"
#include "engine/control_channel.h"
#include "engine/intake.h"
#include "engine/pending_ops.h"
#include "engine/request.h"
#include "negotiation/coordinator.h"
#include "util/fifo.h"

namespace hvd::engine {

// What a negotiator works with, all borrowed: they outlive it.
struct NegotiatorParts {
    int32_t rank = 0;
    int32_t size = 1;
    ControlChannel *control = nullptr;
    Intake *intake = nullptr;       // finds the request in flight under a name
    PendingOps *pending = nullptr;  // requests reported and not yet run
    config::RuntimeConfig *config = nullptr;
};

class Negotiator {
  public:
    virtual ~Negotiator() = default;

    // Requests that became ready on this rank (already in the pending ops), in the order
    // they were enqueued; a grouped op's members together, in member order.
    virtual void report(const std::vector<RequestPtr> &ready) = 0;
    // Takes the negotiation messages that arrived from other ranks. Returns whether there
    // were any. Throws hvd::Error on a failed receive or a malformed message.
    virtual bool receive() = 0;
    // Appends to `agreed`, in the order every rank runs them, the responses that are
    // settled, each carrying this rank's pending request for it (null where it has none).
    // Sends what other ranks need to settle theirs. Returns whether anything happened.
    virtual bool advance(util::Fifo<Response> &agreed) = 0;
    // The part of advance() that sends no responses: what has arrived and is settled goes
    // into `agreed` (the response cache may still vote). For a last flush before an abort.
    virtual bool take_agreed(util::Fifo<Response> &agreed) = 0;
    // Forgets every request waiting on negotiation: the context aborted, and the engine
    // fails them with the pending ops.
    virtual void drop_waiting() = 0;

    // Rank 0's coordinator (null on other ranks): the ops some ranks have not reported.
    virtual negotiation::Coordinator *coordinator() = 0;
    // Rank 0: sends responses the coordinator emitted outside a report (a stall shutdown's
    // error responses) to the ranks they concern.
    virtual void deliver(std::vector<Response> emitted) = 0;

    // When a pass must run at the latest though no message or enqueue comes (a vote held
    // back for a while); time_point::max() when nothing waits on time.
    virtual std::chrono::steady_clock::time_point pass_due() const {
        return std::chrono::steady_clock::time_point::max();
    }

    // Ops this rank ran from the response cache, and ops negotiated through the coordinator.
    // Thread-safe.
    virtual uint64_t cache_hits() const = 0;
    virtual uint64_t negotiated() const = 0;
};

}  // namespace hvd::engine
