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
// How long a rank with nothing pending holds back an empty vote that others' ready ops wait
// on (hold_vote). Bounded, because the round also orders rank 0's batches.
constexpr auto kEmptyVoteHold = std::chrono::milliseconds(5);

}  // namespace

using negotiation::RoundOutcome;
using negotiation::RoundVote;
using negotiation::SetOutcome;

CacheNegotiator::CacheNegotiator(const NegotiatorParts &parts)
    : CoordinatorNegotiator(parts),
      rounds_(parts.size),
      relayed_(negotiation::votes_relayed(parts.size)),
      vote_batches_(static_cast<size_t>(parts.size), 0) {
    std::vector<int32_t> all(static_cast<size_t>(parts.size));
    for (int32_t r = 0; r < parts.size; ++r)
        all[static_cast<size_t>(r)] = r;
    members_[0] = std::move(all);
    global_ = sets_.emplace(0, std::make_unique<SetCache>(0)).first->second.get();
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
        SetCache *sc = set_cache(req->meta.set_id);
        uint32_t bit = 0;
        Lookup found = look_up(sc, *req, &bit);
        if (found == Lookup::kHit && !sc->suspended &&
            sc->waiting.try_emplace(bit, CachedWait{req, now, false, nullptr})) {
            cache_news_ = true;
            continue;
        }
        hand_to_coordinator(sc, *req, found, bit, &to_coordinator);
    }
    report_metas(to_coordinator, report_round());
}

CacheNegotiator::Lookup CacheNegotiator::look_up(SetCache *sc, Request &req, uint32_t *bit) {
    if (sc == nullptr) return Lookup::kMiss;
    // A name in flight remembers where the cache had it: no search by name each step.
    return req.in_flight != nullptr ? sc->cache.lookup(req.meta, bit, &req.in_flight->cache_memo)
                                    : sc->cache.lookup(req.meta, bit);
}

void CacheNegotiator::hand_to_coordinator(SetCache *sc, const Request &req, Lookup found,
                                          uint32_t bit, std::vector<OpMeta> *to_coordinator) {
    // Other members may hold the same op as a cache hit: an invalid vote sends theirs to the
    // coordinator too.
    if (found != Lookup::kMiss) {
        sc->invalid.set(bit);
        cache_news_ = true;
    }
    // The set's other members wait in rounds for nothing from a joined rank; its vote tells
    // them.
    if (req.meta.type == OpType::kJoin) cache_news_ = true;
    to_coordinator->push_back(req.meta);
}

void CacheNegotiator::drop_waiting() {
    for (auto &entry : sets_)
        entry.second->waiting.clear();
}

bool CacheNegotiator::receive() {
    bool any = CoordinatorNegotiator::receive();
    any |= receive_votes();
    if (relayed_worker()) any |= receive_outcomes();
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
        RoundVote vote = decode_vote(payload);
        any = true;
        if (relayed_worker()) {
            if (sender != negotiation::kCoordinator)
                throw Error(HVD_ERR_TRANSPORT,
                            strprintf("rank %d: rank %d sent it a cache vote; in a job of %d "
                                      "ranks votes go to rank 0",
                                      parts_.rank, sender, parts_.size));
            // Rank 0's vote prompts; its outcome of the round may have come first.
            if (vote.round <= rounds_done_) continue;
        }
        rounds_.add(sender, std::move(vote), rounds_done_);
    }
    return any;
}

bool CacheNegotiator::receive_outcomes() {
    bool any = false;
    std::string payload;
    int32_t sender = -1;
    while (parts_.control->receive(negotiation::kCoordinator, negotiation::kOutcomeMessage,
                                   &payload, &sender, "a cache round's outcome")) {
        RoundOutcome outcome = decode_outcome(payload);
        const uint64_t round = outcome.round;
        if (round <= rounds_done_ || round > rounds_voted_ || outcomes_.count(round) != 0)
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("rank %d: rank 0 sent the outcome of cache round %llu; this "
                                  "rank voted in %llu rounds and finished %llu",
                                  parts_.rank, static_cast<unsigned long long>(round),
                                  static_cast<unsigned long long>(rounds_voted_),
                                  static_cast<unsigned long long>(rounds_done_)));
        outcomes_.emplace(round, std::move(outcome));
        any = true;
    }
    return any;
}

// Puts coordinator batches and finished rounds into the agreed order in rank 0's order: a batch
// stamped s after round s, round k after the batches rank 0 sent before starting it.
bool CacheNegotiator::advance_cache(util::Fifo<Response> &agreed) {
    bool any = false;
    mark_stale_cached();
    evict_when_off();
    for (;;) {
        negotiation::ResponseBatch *batch = next_batch();
        if (batch != nullptr && batch->stamp <= rounds_done_) {
            schedule(*batch, agreed);
            pop_batch();
            any = true;
            continue;
        }
        uint64_t next = rounds_done_ + 1;
        if (rounds_voted_ == rounds_done_ &&
            (cache_news_ || (rounds_.any_vote(next) && !hold_vote(next)))) {
            cast_vote();
            any = true;
        }
        RoundOutcome outcome;
        if (take_round(next, &outcome)) {
            run_round(outcome, agreed);
            any = true;
            continue;
        }
        break;
    }
    report_metas(std::exchange(flushed_, {}), report_round());
    return any;
}

bool CacheNegotiator::take_round(uint64_t round, RoundOutcome *out) {
    if (relayed_worker()) {
        auto it = outcomes_.find(round);
        if (it == outcomes_.end() || it->second.batches > batches_scheduled()) return false;
        *out = std::move(it->second);
        outcomes_.erase(it);
        rounds_.drop(round);  // rank 0's prompt, if it came
        return true;
    }
    if (!rounds_.complete(round) || rounds_.batches_before(round) > batches_scheduled())
        return false;
    *out = rounds_.take(round, [this](uint16_t id) { return members(id); });
    if (relayed_) send_outcome(*out);
    return true;
}

void CacheNegotiator::send_outcome(const RoundOutcome &outcome) {
    RoundOutcome theirs = outcome;
    for (int32_t peer = 0; peer < parts_.size; ++peer) {
        if (peer == parts_.rank) continue;
        theirs.batches = vote_batches_[static_cast<size_t>(peer)];
        parts_.control->send(peer, negotiation::kOutcomeMessage, encode_outcome(theirs));
    }
}

bool CacheNegotiator::hold_vote(uint64_t round) {
    if (!parts_.pending->empty() ||
        !rounds_.awaits_only(round, parts_.rank, [this](uint16_t id) { return members(id); }))
        return false;
    const auto now = std::chrono::steady_clock::now();
    if (held_round_ != round) {
        held_round_ = round;
        held_since_ = now;
    }
    return now - held_since_ < kEmptyVoteHold;
}

std::chrono::steady_clock::time_point CacheNegotiator::pass_due() const {
    if (rounds_voted_ != rounds_done_ || held_round_ != rounds_done_ + 1)
        return std::chrono::steady_clock::time_point::max();
    return held_since_ + kEmptyVoteHold;
}

void CacheNegotiator::cast_vote() {
    RoundVote vote;
    vote.round = ++rounds_voted_;
    for (auto &[id, sc] : sets_) {  // ascending set ids
        negotiation::SetVote sv;
        sv.set_id = id;
        sc->waiting.for_each([&](uint32_t bit, const CachedWait &w) {
            if (!w.stale) sv.ready.set(bit);
        });
        sv.invalid = std::exchange(sc->invalid, BitVector());
        std::vector<uint32_t> invalid = sv.invalid.bits();
        sc->voted_invalid = std::set<uint32_t>(invalid.begin(), invalid.end());
        sv.joined = parts_.pending->join_in(id) != nullptr;
        if (sv.ready.empty() && invalid.empty() && !sv.joined) continue;
        vote.sets.push_back(std::move(sv));
    }
    vote.fusion_threshold = parts_.config->fusion_threshold_bytes.load();
    vote.hierarchical_ops = parts_.config->hierarchical_ops.load();
    cache_news_ = false;
    if (relayed_worker()) {
        // Rank 0's outcome says what the round agreed: this vote is not kept here.
        parts_.control->send(negotiation::kCoordinator, negotiation::kVoteMessage,
                             encode_vote(vote));
        return;
    }
    const bool coordinates = coordinator() != nullptr;
    if (coordinates && relayed_) {
        relay_vote(std::move(vote));
        return;
    }
    const std::string bytes = coordinates ? std::string() : encode_vote(vote);
    for (int32_t peer = 0; peer < parts_.size; ++peer) {
        if (peer == parts_.rank) continue;
        if (coordinates) {
            vote.batches = batches_sent(peer);
            parts_.control->send(peer, negotiation::kVoteMessage, encode_vote(vote));
        } else {
            parts_.control->send(peer, negotiation::kVoteMessage, bytes);
        }
    }
    if (coordinates) vote.batches = batches_sent(parts_.rank);
    rounds_.add(parts_.rank, std::move(vote), rounds_done_);
}

void CacheNegotiator::relay_vote(RoundVote vote) {
    const uint64_t round = vote.round;
    for (int32_t peer = 0; peer < parts_.size; ++peer)
        vote_batches_[static_cast<size_t>(peer)] = batches_sent(peer);
    vote.batches = batches_sent(parts_.rank);
    rounds_.add(parts_.rank, std::move(vote), rounds_done_);
    // A prompted rank reads only the sets (hold_vote); the outcome brings the rest.
    std::string bytes;
    for (int32_t peer = 0; peer < parts_.size; ++peer) {
        if (peer == parts_.rank || rounds_.has_vote(round, peer)) continue;
        if (bytes.empty()) {
            RoundVote prompt = rounds_.merged(round);
            prompt.round = round;
            bytes = encode_vote(prompt);
        }
        parts_.control->send(peer, negotiation::kVoteMessage, bytes);
    }
}

void CacheNegotiator::run_round(const RoundOutcome &outcome, util::Fifo<Response> &agreed) {
    // Straight into the queue, copied from the cache once (a Response is ~200 bytes and three
    // strings; a copy per step and tensor showed in the 256-tensor step).
    const size_t first = agreed.size();
    bool vote_again = false;
    for (const SetOutcome &o : outcome.sets) {
        SetCache *sc = set_cache(o.set_id);
        if (sc == nullptr) {
            mark_used_elsewhere(o);
            continue;
        }
        // Created or destroyed since the last round: votes may have meant the set before.
        if (sets_changed_.count(o.set_id) != 0) continue;
        run_set(*sc, o, agreed, &vote_again);
    }
    // Sets run one after the other, and fusion never joins two sets' ops (fusable_together),
    // so a set's runs are the same on all its members.
    negotiation::plan_fusion(agreed, first, static_cast<size_t>(outcome.fusion_threshold));
    for (size_t i = first; i < agreed.size(); ++i)
        agreed[i].hierarchical =
            (outcome.hierarchical_ops & negotiation::op_type_bit(agreed[i].type)) != 0;
    cache_hits_.fetch_add(agreed.size() - first, std::memory_order_relaxed);
    finish_round(outcome, &vote_again);
    ++rounds_done_;
    if (vote_again) cache_news_ = true;
}

void CacheNegotiator::run_set(SetCache &sc, const SetOutcome &outcome, util::Fifo<Response> &agreed,
                              bool *vote_again) {
    BitVector group_tried;  // bits of groups already tried in this round (run or not)
    for (uint32_t bit : outcome.ready_everywhere.bits()) {
        CachedWait *wait = sc.waiting.find(bit);
        if (wait == nullptr && group_tried.test(bit)) continue;  // ran with its group
        // A bit changed since the last round may have meant another op when some rank voted.
        if (sc.cache.touched(bit) || outcome.invalid.test(bit)) {
            *vote_again |= wait != nullptr;
            continue;
        }
        if (wait == nullptr || sc.cache.response(bit) == nullptr)
            throw Error(HVD_ERR_INTERNAL,
                        strprintf("rank %d: cache round %llu agreed on bit %u of process set "
                                  "%u, which this rank did not vote for",
                                  parts_.rank, static_cast<unsigned long long>(rounds_done_ + 1),
                                  bit, outcome.set_id));
        if (wait->group_bits) {
            // Its members in member order, all of them or (some bit not agreed or changed,
            // the same on every member) none yet; tried once per round, at its first bit.
            if (group_tried.test(bit)) continue;
            std::shared_ptr<const std::vector<uint32_t>> group = wait->group_bits;
            for (uint32_t b : *group)
                group_tried.set(b);
            if (!run_group(sc, *group, outcome, agreed)) *vote_again = true;
            continue;
        }
        queue_cached(sc, bit, agreed);
    }
    negotiation::CacheBitAllocator *bits = cache_bits(outcome.set_id);
    for (uint32_t bit : outcome.invalid.bits()) {
        if (sc.cache.touched(bit)) {
            // Some votes may have meant the op the bit held before: keep the entry, and vote
            // again where this rank's vote meant the current one.
            if (sc.voted_invalid.count(bit) != 0) {
                sc.invalid.set(bit);
                *vote_again = true;
            }
            continue;
        }
        flush_cached(sc, bit);
        if (const Response *cached = sc.cache.response(bit)) {
            if (bits != nullptr) bits->release(bit, cached->name);
            sc.cache.erase(bit);
        }
    }
}

void CacheNegotiator::finish_round(const RoundOutcome &outcome, bool *vote_again) {
    auto o = outcome.sets.begin();
    for (auto &[id, sc] : sets_) {  // ascending, as outcome.sets
        while (o != outcome.sets.end() && o->set_id < id)
            ++o;
        const bool voted = o != outcome.sets.end() && o->set_id == id;
        if (sets_changed_.count(id) != 0) {
            // Its votes were not counted: what this rank voted, it votes again.
            for (uint32_t bit : sc->voted_invalid)
                sc->invalid.set(bit);
            *vote_again |= !sc->voted_invalid.empty() || !sc->waiting.empty();
        } else {
            // While a member is joined it never has the set's cached ops ready: use the
            // coordinator, which knows how joined ranks take part.
            sc->suspended = voted && o->any_joined;
            if (sc->suspended)
                while (!sc->waiting.empty())
                    flush_cached(*sc, sc->waiting.any_key());
        }
        sc->voted_invalid.clear();
        sc->cache.clear_touched();
    }
    sets_changed_.clear();
}

void CacheNegotiator::scheduled(Response &resp) {
    if (resp.status == HVD_OK && resp.request != nullptr) {
        if (resp.type == OpType::kProcessSetCreate && !resp.first_dims.empty())
            set_created(static_cast<uint16_t>(resp.first_dims[0]), resp.request->meta.splits);
        else if (resp.type == OpType::kProcessSetDestroy)
            set_destroyed(static_cast<uint16_t>(resp.request->meta.root));
    }
    if (resp.cache_bit < 0) return;
    SetCache *sc = set_cache(resp.set_id);
    if (sc == nullptr) return;  // a set's responses reach its members only
    const OpMeta *mine = resp.request ? &resp.request->meta : nullptr;
    for (uint32_t bit : sc->cache.put(static_cast<uint32_t>(resp.cache_bit), resp, mine))
        cache_bit_changed(*sc, bit);
}

// A bit now means another op (or none): a request waiting on it goes to the coordinator,
// and an invalid vote this rank cast or meant to cast for it is moot.
void CacheNegotiator::cache_bit_changed(SetCache &sc, uint32_t bit) {
    flush_cached(sc, bit);
    sc.voted_invalid.erase(bit);
    sc.invalid.reset(bit);
}

void CacheNegotiator::queue_cached(SetCache &sc, uint32_t bit, util::Fifo<Response> &agreed) {
    CachedWait *wait = sc.waiting.find(bit);
    agreed.push_back(*sc.cache.response(bit));
    // Numbered per set: every member runs the set's cached ops in one order.
    agreed.back().seq =
        negotiation::kCachedSeqFlag | (sc.cached_seq++ & (negotiation::kCachedSeqFlag - 1));
    agreed.back().request = std::move(wait->req);
    sc.waiting.erase(bit);
    if (negotiation::CacheBitAllocator *bits = cache_bits(sc.cache.set_id())) bits->used(bit);
}

void CacheNegotiator::flush_cached(SetCache &sc, uint32_t bit) {
    CachedWait *wait = sc.waiting.find(bit);
    if (wait == nullptr) return;
    std::shared_ptr<const std::vector<uint32_t>> group = std::move(wait->group_bits);
    flushed_.push_back(wait->req->meta);
    sc.waiting.erase(bit);
    if (!group) return;
    // The rest of its group goes too: the coordinator holds a group until all of it is ready.
    for (uint32_t b : *group) {
        CachedWait *w = sc.waiting.find(b);
        if (w == nullptr || w->group_bits != group) continue;
        flushed_.push_back(w->req->meta);
        sc.waiting.erase(b);
    }
}

// The cache switched off at run time (rank 0's capacity 0, hvd_config_set or autotune): rank 0
// votes every entry it holds invalid, so that every member drops them at the same round and
// their ops go through the coordinator from then on. One vote at a time: entries a round in
// flight may yet drop wait for it.
void CacheNegotiator::evict_when_off() {
    if (coordinator() == nullptr || parts_.config->cache_capacity.load() != 0) return;
    if (rounds_voted_ != rounds_done_) return;
    for (auto &[id, sc] : sets_) {
        if (sc->cache.size() == 0) continue;
        for (uint32_t bit : sc->cache.bits()) {
            if (sc->invalid.test(bit)) continue;
            sc->invalid.set(bit);
            cache_news_ = true;
        }
    }
}

void CacheNegotiator::mark_stale_cached() {
    auto now = std::chrono::steady_clock::now();
    if (now < next_stale_check_) return;
    bool any = false;
    for (auto &[id, sc] : sets_) {
        if (sc->waiting.empty()) continue;
        any = true;
        sc->waiting.for_each([&, id = id, sc = sc.get()](uint32_t bit, CachedWait &w) {
            if (w.stale || now - w.since < kCachedWaitLimit) return;
            w.stale = true;
            sc->invalid.set(bit);
            cache_news_ = true;
            // A group's members start and stop waiting together (report_group, run_group,
            // flush_cached), so they go stale in the same pass: one line, at its first member.
            const std::vector<uint32_t> *group = w.group_bits.get();
            if (group != nullptr && bit != group->front()) return;
            HVD_LOG(
                kDebug, parts_.rank,
                "'%s' (process set %u)%s waited %lld ms as a cached op; handing it to the "
                "coordinator",
                w.req->meta.name.c_str(), id,
                group != nullptr ? " (with the rest of its group)" : "",
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(now - w.since).count()));
        });
    }
    if (any) next_stale_check_ = now + kStaleCheckPeriod;
}

}  // namespace hvd::engine
