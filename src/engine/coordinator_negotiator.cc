// SPDX-License-Identifier: Apache-2.0
#include "engine/coordinator_negotiator.h"

#include <string>
#include <utility>

#include "common/error.h"
#include "negotiation/control_tags.h"
#include "negotiation/fusion_planner.h"
#include "negotiation/response_cache.h"

namespace hvd::engine {

using negotiation::kCoordinator;
using negotiation::ResponseBatch;

CoordinatorNegotiator::CoordinatorNegotiator(const NegotiatorParts &parts) : parts_(parts) {
    if (parts_.rank == kCoordinator) {
        coordinator_ = std::make_unique<negotiation::Coordinator>(parts_.size);
        batches_sent_.assign(static_cast<size_t>(parts_.size), 0);
    }
}

void CoordinatorNegotiator::report(const std::vector<RequestPtr> &ready) {
    std::vector<OpMeta> metas;
    metas.reserve(ready.size());
    for (const RequestPtr &r : ready)
        metas.push_back(r->meta);
    report_metas(metas, 0);
}

void CoordinatorNegotiator::report_metas(const std::vector<OpMeta> &metas, uint64_t after_round) {
    if (metas.empty()) return;
    negotiation::ReadyReport report;
    report.after_round = after_round;
    report.metas = metas;
    if (coordinator_) {
        coordinator_->add_ready(parts_.rank, report, &outbox_);
    } else {
        parts_.control->send(kCoordinator, negotiation::kReadyMessage, encode_ready(report));
    }
}

bool CoordinatorNegotiator::receive() {
    bool any = false;
    std::string payload;
    int32_t sender = -1;
    if (coordinator_) {
        while (parts_.control->receive(-1, negotiation::kReadyMessage, &payload, &sender,
                                       "a control message")) {
            coordinator_->add_ready(sender, negotiation::decode_ready(payload), &outbox_);
            any = true;
        }
        return any;
    }
    while (parts_.control->receive(kCoordinator, negotiation::kResponseMessage, &payload, &sender,
                                   "the coordinator's answer")) {
        accept_batch(negotiation::decode_batch(payload));
        any = true;
    }
    return any;
}

bool CoordinatorNegotiator::advance(util::Fifo<Response> &agreed) {
    bool any = deliver_emitted();
    any |= take_agreed(agreed);
    return any;
}

bool CoordinatorNegotiator::take_agreed(util::Fifo<Response> &agreed) {
    bool any = false;
    while (ResponseBatch *batch = next_batch()) {
        schedule(*batch, agreed);
        pop_batch();
        any = true;
    }
    return any;
}

// Straight to the responses waiting to be sent: what the coordinator's reports put in the
// outbox stays there.
void CoordinatorNegotiator::deliver(std::vector<Response> emitted) {
    for (Response &r : emitted)
        undelivered_.push_back(std::move(r));
    send_undelivered();
}

bool CoordinatorNegotiator::deliver_emitted() {
    if (!has_undelivered()) return false;
    for (Response &r : outbox_)
        undelivered_.push_back(std::move(r));
    outbox_.clear();
    return send_undelivered();
}

bool CoordinatorNegotiator::send_undelivered() {
    const uint64_t rounds = rounds_started();
    // A response waits for the cache round its reports named (the coordinator's order is
    // kept: what was emitted after it waits too).
    std::vector<Response> responses;
    while (!undelivered_.empty() && undelivered_.front().after_round <= rounds) {
        responses.push_back(std::move(undelivered_.front()));
        undelivered_.pop_front();
    }
    if (responses.empty()) return false;
    const config::RuntimeConfig &config = *parts_.config;
    negotiation::plan_fusion(responses, static_cast<size_t>(config.fusion_threshold_bytes.load()));
    // Each set has its own bits, and the capacity is per set.
    const size_t capacity = static_cast<size_t>(config.cache_capacity.load());
    for (Response &r : responses) {
        if (!negotiation::ResponseCache::cacheable(r)) continue;
        if (negotiation::CacheBitAllocator *bits = cache_bits(r.set_id))
            r.cache_bit = bits->assign(r.name, capacity);
    }
    // Each rank gets, in emission order, the responses of the sets it belongs to. Membership
    // changes are ops of the global set (0), so they reach every rank.
    const uint32_t hierarchical_ops = config.hierarchical_ops.load();
    std::vector<std::vector<Response>> by_peer(static_cast<size_t>(parts_.size));
    for (const Response &r : responses) {
        if (r.addressee >= 0) {
            by_peer[r.addressee].push_back(r);
            continue;
        }
        for (int32_t member : coordinator_->members(r.set_id))
            by_peer[member].push_back(r);
    }
    for (int32_t peer = 0; peer < parts_.size; ++peer) {
        if (by_peer[peer].empty()) continue;
        ResponseBatch batch;
        batch.index = ++batches_sent_[peer];
        batch.stamp = rounds;  // runs after the rounds started so far
        batch.hierarchical_ops = hierarchical_ops;
        batch.responses = std::move(by_peer[peer]);
        if (peer == parts_.rank) {
            accept_batch(std::move(batch));
        } else {
            parts_.control->send(peer, negotiation::kResponseMessage, encode_batch(batch));
        }
    }
    return true;
}

void CoordinatorNegotiator::accept_batch(ResponseBatch batch) {
    if (batch.index <= batches_scheduled_ || batches_in_.count(batch.index))
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rank %d: coordinator batch %llu arrived twice", parts_.rank,
                              static_cast<unsigned long long>(batch.index)));
    uint64_t index = batch.index;
    batches_in_.emplace(index, std::move(batch));
}

ResponseBatch *CoordinatorNegotiator::next_batch() {
    auto b = batches_in_.find(batches_scheduled_ + 1);
    return b == batches_in_.end() ? nullptr : &b->second;
}

void CoordinatorNegotiator::pop_batch() {
    batches_in_.erase(batches_scheduled_ + 1);
    ++batches_scheduled_;
}

void CoordinatorNegotiator::schedule(ResponseBatch &batch, util::Fifo<Response> &agreed) {
    for (Response &resp : batch.responses) {
        // Found by name once, here: the request goes with its response to the run.
        resp.request = find_pending(resp.set_id, resp.name);
        resp.hierarchical = (batch.hierarchical_ops & negotiation::op_type_bit(resp.type)) != 0;
        scheduled(resp);
        negotiated_.fetch_add(1, std::memory_order_relaxed);
        agreed.push_back(std::move(resp));
    }
}

// The request a name in flight belongs to is pending once the engine has taken it from the
// queue; only a pending one can have been reported, and so be scheduled.
RequestPtr CoordinatorNegotiator::find_pending(uint16_t set_id, const std::string &name) {
    Request *r = parts_.intake->find(set_id, name);
    return r != nullptr ? parts_.pending->shared(*r) : nullptr;
}

}  // namespace hvd::engine
