// SPDX-License-Identifier: Apache-2.0
// Negotiation with Horovod's response cache (negotiation/response_cache.h, cache_round.h):
// a ready op the job ran before (same name and parameters, global process set) waits on its
// cache bit, and rounds of bit-vector votes among all ranks agree which of them every rank
// has ready, with no coordinator round trip. Everything else, and cached ops that changed or
// waited too long (invalid votes), goes to the coordinator (the base class). Every rank puts
// coordinator batches and finished rounds into the agreed order in rank 0's order: a batch
// stamped s after round s, round k after the batches rank 0 sent before starting it.
// Grouped ops (cache_negotiator_groups.cc) wait on their bits and run from the cache all
// together, or all go to the coordinator, which holds a group until all of it is ready.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "engine/coordinator_negotiator.h"
#include "negotiation/cache_bit_allocator.h"
#include "negotiation/cache_round.h"
#include "negotiation/response_cache.h"
#include "util/bit_table.h"

namespace hvd::engine {

class CacheNegotiator : public CoordinatorNegotiator {
  public:
    explicit CacheNegotiator(const NegotiatorParts &parts);

    void report(const std::vector<RequestPtr> &ready) override;
    bool receive() override;
    bool advance(util::Fifo<Response> &agreed) override;
    bool take_agreed(util::Fifo<Response> &agreed) override { return advance_cache(agreed); }
    void drop_waiting() override { cached_waiting_.clear(); }
    uint64_t cache_hits() const override { return cache_hits_.load(); }

  protected:
    uint64_t rounds_started() const override { return rounds_voted_; }
    negotiation::CacheBitAllocator *cache_bits() override { return cache_bits_.get(); }
    // A coordinator response entering the agreed order updates the cache (every rank at the
    // same point of the order).
    void scheduled(Response &resp) override;

  private:
    using Lookup = negotiation::ResponseCache::Lookup;
    struct CachedWait {
        RequestPtr req;
        std::chrono::steady_clock::time_point since;
        bool stale = false;  // waited too long: voted invalid, not ready
        // A grouped op's members' bits, shared by their waits; null for a single op.
        std::shared_ptr<const std::vector<uint32_t>> group_bits;
    };

    // Batches and rounds into the agreed order, as far as both allow.
    bool advance_cache(util::Fifo<Response> &agreed);
    bool receive_votes();
    void cast_vote();
    void run_round(const negotiation::RoundOutcome &outcome, util::Fifo<Response> &agreed);
    // The request waiting on `bit` goes to the coordinator instead (its group with it).
    void flush_cached(uint32_t bit);
    // A bit now means another op (or none).
    void cache_bit_changed(uint32_t bit);
    void mark_stale_cached();
    // After `first` in reqs: the group's members, waiting on their bits or handed to the
    // coordinator together. Returns how many members it took.
    size_t report_group(const std::vector<RequestPtr> &reqs, size_t first,
                        std::chrono::steady_clock::time_point now,
                        std::vector<OpMeta> *to_coordinator);
    // The group's members into agreed if every one's bit is agreed and unchanged; false
    // (nothing queued) otherwise.
    bool run_group(const std::vector<uint32_t> &bits, const negotiation::RoundOutcome &outcome,
                   util::Fifo<Response> &agreed);
    // The cache's answer for req, and its bit.
    Lookup look_up(Request &req, uint32_t *bit);
    // req goes to the coordinator, with an invalid vote for its bit if the cache knew its name.
    void hand_to_coordinator(const Request &req, Lookup found, uint32_t bit,
                             std::vector<OpMeta> *to_coordinator);
    // The cached response of the request waiting on `bit` into agreed, with that request; the
    // wait ends.
    void queue_cached(uint32_t bit, util::Fifo<Response> &agreed);
    // The cache round after which ops reported now run.
    uint64_t report_round() const { return rounds_voted_ + (cache_news_ ? 1 : 0); }

    negotiation::ResponseCache cache_;
    std::unique_ptr<negotiation::CacheBitAllocator> cache_bits_;  // rank 0
    negotiation::RoundTable rounds_;
    uint64_t rounds_voted_ = 0;                  // rounds this rank voted in (rank 0: started)
    uint64_t rounds_done_ = 0;                   // rounds put into the agreed order
    util::BitTable<CachedWait> cached_waiting_;  // by bit
    negotiation::BitVector invalid_;             // to vote invalid in the next round
    // Invalid bits of this rank's vote in the round in flight that still mean the op they
    // meant when voted (the bit has not changed since).
    std::set<uint32_t> voted_invalid_;
    bool cache_news_ = false;          // something to vote on that the last vote did not have
    bool cache_suspended_ = false;     // a rank has joined: everything goes to the coordinator
    std::vector<OpMeta> flushed_;      // cached requests to report to the coordinator
    std::vector<Lookup> group_found_;  // report_group's lookups (no allocation)
    std::chrono::steady_clock::time_point next_stale_check_{};
    uint32_t cached_seq_ = 0;
    std::atomic<uint64_t> cache_hits_{0};
};

}  // namespace hvd::engine
