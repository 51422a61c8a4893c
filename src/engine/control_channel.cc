// SPDX-License-Identifier: Apache-2.0
#include "engine/control_channel.h"

#include <utility>

#include "common/error.h"
#include "negotiation/control_tags.h"

namespace hvd::engine {

void ControlChannel::send(int32_t peer, uint32_t kind, std::string payload) {
    outgoing_.emplace_back();
    Outgoing &m = outgoing_.back();
    m.payload = std::move(payload);
    transport_->isend(peer, negotiation::control_tag(rank_, kind), m.payload.data(),
                      m.payload.size(), &m.completion);
}

bool ControlChannel::receive(int32_t from, uint32_t kind, std::string *payload, int32_t *sender,
                             const char *what) {
    const uint64_t mask =
        from < 0 ? transport::kTagFullMask & ~transport::kTagSourceMask : transport::kTagFullMask;
    transport::Completion c;
    if (!transport_->try_recv_any(negotiation::control_tag(from < 0 ? 0 : from, kind), mask,
                                  payload, &c))
        return false;
    if (c.status != HVD_OK)
        throw Error(c.status, strprintf("rank %d: receiving %s failed", rank_, what));
    *sender = transport::tag_source(c.sender_tag);
    return true;
}

void ControlChannel::reap() {
    for (auto it = outgoing_.begin(); it != outgoing_.end();) {
        if (!it->completion.done) {
            ++it;
            continue;
        }
        if (it->completion.status != HVD_OK)
            throw Error(it->completion.status,
                        strprintf("rank %d: sending a control message to rank %d failed: %s", rank_,
                                  it->completion.peer, status_message(it->completion.status)));
        it = outgoing_.erase(it);
    }
}

void ControlChannel::drain_for(std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        transport_->progress();
        bool all_done = true;
        for (const auto &m : outgoing_)
            all_done &= m.completion.done;
        if (all_done) break;
    }
}

}  // namespace hvd::engine
