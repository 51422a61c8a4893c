// SPDX-License-Identifier: Apache-2.0
// Horovod's negotiation: every rank reports its ready ops to rank 0, whose coordinator
// answers, once an op is ready on every member of its process set, with one response per op
// (or an error naming what the ranks disagree on), in one global order. Rank 0 plans the
// fusion of each batch of responses and sends each rank, in numbered batches, the responses
// of the sets it is in; every rank runs the batches in their order. The base of
// CacheNegotiator, which adds the response cache's rounds and orders them with the batches.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/negotiator.h"
#include "negotiation/cache_bit_allocator.h"
#include "negotiation/coordinator.h"

namespace hvd::engine {

class CoordinatorNegotiator : public Negotiator {
  public:
    explicit CoordinatorNegotiator(const NegotiatorParts &parts);

    void report(const std::vector<RequestPtr> &ready) override;
    bool receive() override;
    bool advance(util::Fifo<Response> &agreed) override;
    bool take_agreed(util::Fifo<Response> &agreed) override;
    void drop_waiting() override {}
    negotiation::Coordinator *coordinator() override { return coordinator_.get(); }
    void deliver(std::vector<Response> emitted) override;
    uint64_t cache_hits() const override { return 0; }
    uint64_t negotiated() const override { return negotiated_.load(); }

  protected:
    // Reports ops to the coordinator (rank 0's own go straight in); their responses run after
    // the response cache's round after_round (0: no cache).
    void report_metas(const std::vector<OpMeta> &metas, uint64_t after_round);
    // Rank 0: sends the responses emitted so far whose cache round has started
    // (after_round <= rounds_started()), in emission order, fusion planned; the rest wait for
    // their round, and so does everything emitted after them. Each batch is stamped with
    // rounds_started(): it runs after that round. Cacheable responses get a bit of their
    // set's bit space from cache_bits() where there is one. Returns whether anything was sent.
    bool deliver_emitted();
    // The sending part of deliver_emitted(), for the responses already waiting.
    bool send_undelivered();
    // The response cache's rounds started so far (none without a cache).
    virtual uint64_t rounds_started() const { return 0; }
    // Rank 0's allocator of the cache bits of process set `set_id`, or null without a cache.
    virtual negotiation::CacheBitAllocator *cache_bits(uint16_t /*set_id*/) { return nullptr; }
    // Whether rank 0 holds emitted responses not yet sent.
    bool has_undelivered() const { return !outbox_.empty() || !undelivered_.empty(); }
    // The next batch in rank 0's order if it has arrived, else null. pop_batch() once the
    // caller has scheduled it.
    negotiation::ResponseBatch *next_batch();
    void pop_batch();
    // Moves a batch's responses into agreed, each with this rank's request, calling
    // scheduled() on each first.
    void schedule(negotiation::ResponseBatch &batch, util::Fifo<Response> &agreed);
    // Called for each response of a batch as it is scheduled, with its request attached.
    virtual void scheduled(Response & /*resp*/) {}
    // Batches this rank scheduled; batches rank 0 sent to `peer` (rank 0 only).
    uint64_t batches_scheduled() const { return batches_scheduled_; }
    uint64_t batches_sent(int32_t peer) const { return batches_sent_[peer]; }
    // This rank's pending request of that name, or null.
    RequestPtr find_pending(uint16_t set_id, const std::string &name);

    const NegotiatorParts parts_;

  private:
    void accept_batch(negotiation::ResponseBatch batch);

    std::unique_ptr<negotiation::Coordinator> coordinator_;  // rank 0 only
    std::vector<Response> outbox_;                           // rank 0: emitted, not yet sent
    std::deque<Response> undelivered_;                       // rank 0: waiting for a round
    std::vector<uint64_t> batches_sent_;                     // rank 0: batches sent to each rank
    std::map<uint64_t, negotiation::ResponseBatch> batches_in_;  // by index, not yet scheduled
    uint64_t batches_scheduled_ = 0;
    std::atomic<uint64_t> negotiated_{0};
};

}  // namespace hvd::engine
