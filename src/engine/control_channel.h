// SPDX-License-Identifier: Apache-2.0
// The engine's control messages to and from the other ranks (ready reports, response
// batches, cache votes, autotuned parameters), over the context's transport. A message sent
// is kept, with its completion, until the transport is done with it. Engine thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <string>

#include "transport/transport.h"

namespace hvd::engine {

class ControlChannel {
  public:
    // transport: borrowed, outlives the channel.
    ControlChannel(int32_t rank, transport::Transport *transport)
        : rank_(rank), transport_(transport) {}
    ControlChannel(const ControlChannel &) = delete;
    ControlChannel &operator=(const ControlChannel &) = delete;

    // Starts sending payload to peer as a message of that kind (negotiation/control_tags.h).
    void send(int32_t peer, uint32_t kind, std::string payload);
    // The next message of that kind that arrived from `from` (any rank when from < 0): true
    // with its payload and sender, false when none is there. Throws hvd::Error with the
    // transport's status and "rank <r>: receiving <what> failed" when the receive failed.
    bool receive(int32_t from, uint32_t kind, std::string *payload, int32_t *sender,
                 const char *what);
    // Lets go of the sends that completed. Throws hvd::Error naming the peer when one failed.
    void reap();
    // Drives the transport until every send completed or `limit` passed: lets the messages
    // just sent leave before an abort closes the endpoints.
    void drain_for(std::chrono::milliseconds limit);
    // Forgets every send: the transport was aborted, and no longer references them.
    void drop_all() { outgoing_.clear(); }

  private:
    struct Outgoing {
        std::string payload;
        transport::Completion completion;
    };
    const int32_t rank_;
    transport::Transport *transport_;
    std::list<Outgoing> outgoing_;
};

}  // namespace hvd::engine
