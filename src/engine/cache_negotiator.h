// SPDX-License-Identifier: Apache-2.0
// Negotiation with Horovod's response cache (negotiation/response_cache.h, cache_round.h),
// one cache per process set: a ready op whose set ran it before (same name and parameters)
// waits on its bit in the set's cache, and rounds of votes among all ranks agree which of
// them every member of the set has ready, with no coordinator round trip. Each set this rank
// is a member of has its own cache, bit space, waiting ops and invalid bits (SetCache);
// rank 0 keeps one bit allocator per set. Everything else, and cached ops that changed or
// waited too long (invalid votes), goes to the coordinator (the base class). Every rank puts
// coordinator batches and finished rounds into the agreed order in rank 0's order: a batch
// stamped s after round s, round k after the batches rank 0 sent before starting it. Within
// a round, the sets' ops run in ascending set id, each set's in ascending bit order, so ranks
// sharing several sets run them in one order. Process sets created or destroyed enter this
// rank's view at their point of the agreed order (cache_negotiator_sets.cc); a destroyed
// set's cache and waiting ops are dropped (the runner fails its requests). A rank that has
// joined a set suspends that set's cache: its ops go to the coordinator while the join lasts.
// Grouped ops (cache_negotiator_groups.cc) wait on their bits and run from the cache all
// together, or all go to the coordinator, which holds a group until all of it is ready.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "engine/coordinator_negotiator.h"
#include "negotiation/cache_bit_allocator.h"
#include "negotiation/cache_round.h"
#include "negotiation/control_tags.h"
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
    void drop_waiting() override;
    uint64_t cache_hits() const override { return cache_hits_.load(); }
    std::chrono::steady_clock::time_point pass_due() const override;
    // Cache rounds put into the agreed order so far.
    uint64_t rounds_done() const { return rounds_done_; }

  protected:
    uint64_t rounds_started() const override { return rounds_voted_; }
    negotiation::CacheBitAllocator *cache_bits(uint16_t set_id) override;
    // A coordinator response entering the agreed order updates the caches and the process
    // sets (every rank at the same point of the order).
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
    // The cache state of one process set this rank is a member of; bits are the set's own.
    struct SetCache {
        explicit SetCache(uint16_t id) : cache(id) {}
        negotiation::ResponseCache cache;
        util::BitTable<CachedWait> waiting;  // by bit
        negotiation::BitVector invalid;      // to vote invalid in the next round
        // Invalid bits of this rank's vote in the round in flight that still mean the op they
        // meant when voted (the bit has not changed since).
        std::set<uint32_t> voted_invalid;
        bool suspended = false;   // a member has joined the set: its ops go to the coordinator
        uint32_t cached_seq = 0;  // numbers the set's ops run from the cache (data tags)
    };

    // Batches and rounds into the agreed order, as far as both allow.
    bool advance_cache(util::Fifo<Response> &agreed);
    bool receive_votes();
    // A worker of a relayed job: rank 0's outcomes of the rounds it voted in.
    bool receive_outcomes();
    void cast_vote();
    // Rank 0 of a relayed job: its vote into the round, and the prompt to every rank that has
    // not voted in it yet: the votes rank 0 holds, merged (RoundTable::merged), so that a rank
    // with nothing ready holds back its empty vote as it would seeing every vote.
    void relay_vote(negotiation::RoundVote vote);
    // The outcome of `round` if it can run now: all its votes here (rank 0 then sends a
    // relayed round's outcome to every other rank), or a relayed round's outcome from rank 0
    // here; and the batches before it scheduled.
    bool take_round(uint64_t round, negotiation::RoundOutcome *out);
    // Rank 0 of a relayed job: the outcome to every other rank, each with its own batches.
    void send_outcome(const negotiation::RoundOutcome &outcome);
    // Votes go to rank 0, and this rank is not rank 0.
    bool relayed_worker() const { return relayed_ && parts_.rank != negotiation::kCoordinator; }
    void run_round(const negotiation::RoundOutcome &outcome, util::Fifo<Response> &agreed);
    // One set's part of a round: its agreed ops into agreed, its invalid bits handled.
    void run_set(SetCache &sc, const negotiation::SetOutcome &outcome, util::Fifo<Response> &agreed,
                 bool *vote_again);
    // After a round: the sets' joins, and votes to repeat where a set changed.
    void finish_round(const negotiation::RoundOutcome &outcome, bool *vote_again);
    // The request waiting on `bit` goes to the coordinator instead (its group with it).
    void flush_cached(SetCache &sc, uint32_t bit);
    // A bit now means another op (or none).
    void cache_bit_changed(SetCache &sc, uint32_t bit);
    void mark_stale_cached();
    // Rank 0 with a cache capacity of 0: every cached entry voted invalid.
    void evict_when_off();
    // After `first` in reqs: the group's members, waiting on their bits or handed to the
    // coordinator together. Returns how many members it took.
    size_t report_group(const std::vector<RequestPtr> &reqs, size_t first,
                        std::chrono::steady_clock::time_point now,
                        std::vector<OpMeta> *to_coordinator);
    // The group's members into agreed if every one's bit is agreed and unchanged; false
    // (nothing queued) otherwise.
    bool run_group(SetCache &sc, const std::vector<uint32_t> &bits,
                   const negotiation::SetOutcome &outcome, util::Fifo<Response> &agreed);
    // The cache's answer for req (kMiss where this rank holds no cache of its set), and its
    // bit.
    Lookup look_up(SetCache *sc, Request &req, uint32_t *bit);
    // req goes to the coordinator, with an invalid vote for its bit if the cache knew its name.
    void hand_to_coordinator(SetCache *sc, const Request &req, Lookup found, uint32_t bit,
                             std::vector<OpMeta> *to_coordinator);
    // The cached response of the request waiting on `bit` into agreed, with that request; the
    // wait ends.
    void queue_cached(SetCache &sc, uint32_t bit, util::Fifo<Response> &agreed);
    // Whether this rank, with nothing pending, holds back its vote in `round`: the votes
    // received wait only for this rank's ready ops, which an empty vote cannot give (the
    // round would agree on nothing, and every rank vote again once this rank's op comes).
    // Held until this rank has news or for at most kEmptyVoteHold.
    bool hold_vote(uint64_t round);
    // The cache round after which ops reported now run.
    uint64_t report_round() const { return rounds_voted_ + (cache_news_ ? 1 : 0); }

    // Process sets (cache_negotiator_sets.cc). This rank's cache of the set, or null where
    // it is not a member (or the set is unknown).
    SetCache *set_cache(uint16_t id) {
        if (id == 0) return global_;
        auto it = sets_.find(id);
        return it == sets_.end() ? nullptr : it->second.get();
    }
    const std::vector<int32_t> *members(uint16_t id) const;
    void set_created(uint16_t id, const std::vector<int32_t> &ranks);
    void set_destroyed(uint16_t id);
    // Rank 0, for a set it is not a member of: the bits the set's members ran from the cache
    // become the most recently used.
    void mark_used_elsewhere(const negotiation::SetOutcome &outcome);

    std::map<uint16_t, std::unique_ptr<SetCache>> sets_;  // the sets this rank is in, by id
    SetCache *global_ = nullptr;                          // sets_[0]
    std::map<uint16_t, std::vector<int32_t>> members_;    // every set this rank knows, by id
    std::set<uint16_t> sets_changed_;  // created or destroyed since the last round
    std::map<uint16_t, negotiation::CacheBitAllocator> cache_bits_;  // rank 0: by set
    negotiation::RoundTable rounds_;
    const bool relayed_;  // votes relayed through rank 0 (negotiation::votes_relayed)
    // Rank 0, relayed: the batches sent to each rank before the round it voted in last.
    std::vector<uint64_t> vote_batches_;
    std::map<uint64_t, negotiation::RoundOutcome> outcomes_;  // relayed worker: by round
    uint64_t rounds_voted_ = 0;  // rounds this rank voted in (rank 0: started)
    uint64_t rounds_done_ = 0;   // rounds put into the agreed order
    bool cache_news_ = false;    // something to vote on that the last vote did not have
    uint64_t held_round_ = 0;    // the round whose vote hold_vote last held back
    std::chrono::steady_clock::time_point held_since_{};
    std::vector<OpMeta> flushed_;      // cached requests to report to the coordinator
    std::vector<Lookup> group_found_;  // report_group's lookups (no allocation)
    std::chrono::steady_clock::time_point next_stale_check_{};
    std::atomic<uint64_t> cache_hits_{0};
};

}  // namespace hvd::engine
