// SPDX-License-Identifier: Apache-2.0
#include "engine/cache_negotiator.h"

#include <chrono>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "negotiation/control_tags.h"
#include "negotiation/fusion_planner.h"

namespace hvd::engine {

namespace {

// A cached op waiting this long for the other ranks is handed to the coordinator (on every
// rank, through an invalid vote), whose stall inspector then names the ranks missing.
constexpr auto kCachedWaitLimit = std::chrono::milliseconds(1000);
constexpr auto kStaleCheckPeriod = std::chrono::milliseconds(100);

}  // namespace

using negotiation::RoundOutcome;
using negotiation::RoundVote;

CacheNegotiator::CacheNegotiator(const NegotiatorParts &parts)
    : CoordinatorNegotiator(parts), rounds_(parts.size) {
    if (parts.rank == negotiation::kCoordinator)
        cache_bits_ = std::make_unique<negotiation::CacheBitAllocator>();
}

void CacheNegotiator::report(const std::vector<RequestPtr> &reqs) {
    std::vector<OpMeta> to_coordinator;
    auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < reqs.size();) {
        if (!reqs[i]->meta.group.empty()) {
            i += report_group(reqs, i, now, &to_coordinator);
            continue;
        }
        const RequestPtr &req = reqs[i++];
        uint32_t bit = 0;
        Lookup found = look_up(*req, &bit);
        if (found == Lookup::kHit && !cache_suspended_ &&
            cached_waiting_.try_emplace(bit, CachedWait{req, now, false, nullptr})) {
            cache_news_ = true;
            continue;
        }
        hand_to_coordinator(*req, found, bit, &to_coordinator);
    }
    report_metas(to_coordinator, report_round());
}

CacheNegotiator::Lookup CacheNegotiator::look_up(Request &req, uint32_t *bit) {
    // A name in flight remembers where the cache had it: no search by name each step.
    return req.in_flight != nullptr ? cache_.lookup(req.meta, bit, &req.in_flight->cache_memo)
                                    : cache_.lookup(req.meta, bit);
}

void CacheNegotiator::hand_to_coordinator(const Request &req, Lookup found, uint32_t bit,
                                          std::vector<OpMeta> *to_coordinator) {
    // Other ranks may hold the same op as a cache hit: an invalid vote sends theirs to the
    // coordinator too.
    if (found != Lookup::kMiss) {
        invalid_.set(bit);
        cache_news_ = true;
    }
    // Other ranks wait in rounds for nothing from a joined rank; its vote tells them.
    if (req.meta.type == OpType::kJoin && req.meta.set_id == 0) cache_news_ = true;
    to_coordinator->push_back(req.meta);
}

bool CacheNegotiator::receive() {
    bool any = CoordinatorNegotiator::receive();
    any |= receive_votes();
    return any;
}

// Coordinator responses out, then cache rounds and batches in order into the agreed queue. A
// second pass when that produced more: a cached op handed to rank 0's own coordinator may have
// completed an op, and a vote may have let held responses go.
bool CacheNegotiator::advance(util::Fifo<Response> &agreed) {
    bool any = false;
    for (int pass = 0; pass < 2; ++pass) {
        deliver_emitted();
        any |= advance_cache(agreed);
        if (!has_undelivered()) break;
    }
    return any;
}

bool CacheNegotiator::receive_votes() {
    bool any = false;
    std::string payload;
    int32_t sender = -1;
    while (parts_.control->receive(-1, kVoteMessage, &payload, &sender, "a cache vote")) {
        rounds_.add(sender, decode_vote(payload), rounds_done_);
        any = true;
    }
    return any;
}

// Puts coordinator batches and finished rounds into the agreed order in rank 0's order: a batch
// stamped s after round s, round k after the batches rank 0 sent before starting it.
bool CacheNegotiator::advance_cache(util::Fifo<Response> &agreed) {
    bool any = false;
    mark_stale_cached();
    for (;;) {
        negotiation::ResponseBatch *batch = next_batch();
        if (batch != nullptr && batch->stamp <= rounds_done_) {
            schedule(*batch, agreed);
            pop_batch();
            any = true;
            continue;
        }
        uint64_t next = rounds_done_ + 1;
        if (rounds_voted_ == rounds_done_ && (cache_news_ || rounds_.any_vote(next))) {
            cast_vote();
            any = true;
        }
        if (rounds_.complete(next) && rounds_.batches_before(next) <= batches_scheduled()) {
            run_round(rounds_.take(next), agreed);
            any = true;
            continue;
        }
        break;
    }
    report_metas(std::exchange(flushed_, {}), report_round());
    return any;
}

void CacheNegotiator::cast_vote() {
    RoundVote vote;
    vote.round = ++rounds_voted_;
    cached_waiting_.for_each([&](uint32_t bit, const CachedWait &w) {
        if (!w.stale) vote.ready.set(bit);
    });
    vote.invalid = std::exchange(invalid_, BitVector());
    std::vector<uint32_t> invalid = vote.invalid.bits();
    voted_invalid_ = std::set<uint32_t>(invalid.begin(), invalid.end());
    vote.joined = parts_.pending->join_in(0) != nullptr;
    vote.fusion_threshold = parts_.config->fusion_threshold_bytes.load();
    cache_news_ = false;
    const bool coordinates = coordinator() != nullptr;
    for (int32_t peer = 0; peer < parts_.size; ++peer) {
        if (coordinates) vote.batches = batches_sent(peer);
        if (peer != parts_.rank)
            parts_.control->send(peer, negotiation::kVoteMessage, encode_vote(vote));
    }
    if (coordinates) vote.batches = batches_sent(parts_.rank);
    rounds_.add(parts_.rank, std::move(vote), rounds_done_);
}

void CacheNegotiator::run_round(const RoundOutcome &outcome, util::Fifo<Response> &agreed) {
    // Straight into the queue, copied from the cache once (a Response is ~200 bytes and three
    // strings; a copy per step and tensor showed in the 256-tensor step).
    const size_t first = agreed.size();
    bool vote_again = false;
    BitVector group_tried;  // bits of groups already tried in this round (run or not)
    for (uint32_t bit : outcome.ready_everywhere.bits()) {
        CachedWait *wait = cached_waiting_.find(bit);
        if (wait == nullptr && group_tried.test(bit)) continue;  // ran with its group
        // A bit changed since the last round may have meant another op when some rank voted.
        if (cache_.touched(bit) || outcome.invalid.test(bit)) {
            vote_again |= wait != nullptr;
            continue;
        }
        if (wait == nullptr || cache_.response(bit) == nullptr)
            throw Error(
                HVD_ERR_INTERNAL,
                strprintf("rank %d: cache round %llu agreed on bit %u, which this rank "
                          "did not vote for",
                          parts_.rank, static_cast<unsigned long long>(rounds_done_ + 1), bit));
        if (wait->group_bits) {
            // Its members in member order, all of them or (some bit not agreed or changed,
            // the same on every rank) none yet; tried once per round, at its first bit.
            if (group_tried.test(bit)) continue;
            std::shared_ptr<const std::vector<uint32_t>> group = wait->group_bits;
            for (uint32_t b : *group)
                group_tried.set(b);
            if (!run_group(*group, outcome, agreed)) vote_again = true;
            continue;
        }
        queue_cached(bit, agreed);
    }
    negotiation::plan_fusion(agreed, first, static_cast<size_t>(outcome.fusion_threshold));
    cache_hits_.fetch_add(agreed.size() - first, std::memory_order_relaxed);
    for (uint32_t bit : outcome.invalid.bits()) {
        if (cache_.touched(bit)) {
            // Some votes may have meant the op the bit held before: keep the entry, and vote
            // again where this rank's vote meant the current one.
            if (voted_invalid_.count(bit) != 0) {
                invalid_.set(bit);
                vote_again = true;
            }
            continue;
        }
        flush_cached(bit);
        if (const Response *cached = cache_.response(bit)) {
            if (cache_bits_) cache_bits_->release(bit, cached->name);
            cache_.erase(bit);
        }
    }
    voted_invalid_.clear();
    // While a rank is joined it never has cached ops ready: use the coordinator, which knows
    // how joined ranks take part.
    cache_suspended_ = outcome.any_joined;
    if (cache_suspended_)
        while (!cached_waiting_.empty())
            flush_cached(cached_waiting_.any_key());
    cache_.clear_touched();
    ++rounds_done_;
    if (vote_again) cache_news_ = true;
}

void CacheNegotiator::scheduled(Response &resp) {
    if (resp.cache_bit < 0) return;
    const OpMeta *mine = resp.request ? &resp.request->meta : nullptr;
    for (uint32_t bit : cache_.put(static_cast<uint32_t>(resp.cache_bit), resp, mine))
        cache_bit_changed(bit);
}

// A bit now means another op (or none): a request waiting on it goes to the coordinator,
// and an invalid vote this rank cast or meant to cast for it is moot.
void CacheNegotiator::cache_bit_changed(uint32_t bit) {
    flush_cached(bit);
    voted_invalid_.erase(bit);
    invalid_.reset(bit);
}

void CacheNegotiator::queue_cached(uint32_t bit, util::Fifo<Response> &agreed) {
    CachedWait *wait = cached_waiting_.find(bit);
    agreed.push_back(*cache_.response(bit));
    agreed.back().seq =
        negotiation::kCachedSeqFlag | (cached_seq_++ & (negotiation::kCachedSeqFlag - 1));
    agreed.back().request = std::move(wait->req);
    cached_waiting_.erase(bit);
    if (cache_bits_) cache_bits_->used(bit);
}

void CacheNegotiator::flush_cached(uint32_t bit) {
    CachedWait *wait = cached_waiting_.find(bit);
    if (wait == nullptr) return;
    std::shared_ptr<const std::vector<uint32_t>> group = std::move(wait->group_bits);
    flushed_.push_back(wait->req->meta);
    cached_waiting_.erase(bit);
    if (!group) return;
    // The rest of its group goes too: the coordinator holds a group until all of it is ready.
    for (uint32_t b : *group) {
        CachedWait *w = cached_waiting_.find(b);
        if (w == nullptr || w->group_bits != group) continue;
        flushed_.push_back(w->req->meta);
        cached_waiting_.erase(b);
    }
}

void CacheNegotiator::mark_stale_cached() {
    if (cached_waiting_.empty()) return;
    auto now = std::chrono::steady_clock::now();
    if (now < next_stale_check_) return;
    next_stale_check_ = now + kStaleCheckPeriod;
    cached_waiting_.for_each([&](uint32_t bit, CachedWait &w) {
        if (w.stale || now - w.since < kCachedWaitLimit) return;
        w.stale = true;
        invalid_.set(bit);
        cache_news_ = true;
        // A group's members start and stop waiting together (report_group, run_group,
        // flush_cached), so they go stale in the same pass: one line, at its first member.
        const std::vector<uint32_t> *group = w.group_bits.get();
        if (group != nullptr && bit != group->front()) return;
        HVD_LOG(kDebug, parts_.rank,
                "'%s'%s waited %lld ms as a cached op; handing it to the coordinator",
                w.req->meta.name.c_str(), group != nullptr ? " (with the rest of its group)" : "",
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - w.since).count()));
    });
}

}  // namespace hvd::engine
