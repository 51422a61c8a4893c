// SPDX-License-Identifier: Apache-2.0
#include "negotiation/cache_round.h"

#include <algorithm>

#include "common/error.h"
#include "negotiation/response_cache.h"
#include "util/wire.h"

namespace hvd::negotiation {

using util::WireReader;
using util::WireWriter;

void BitVector::set(uint32_t bit) {
    if (words_.size() <= bit / 64) words_.resize(bit / 64 + 1, 0);
    words_[bit / 64] |= UINT64_C(1) << (bit % 64);
}

void BitVector::reset(uint32_t bit) {
    if (bit / 64 < words_.size()) words_[bit / 64] &= ~(UINT64_C(1) << (bit % 64));
}

bool BitVector::test(uint32_t bit) const {
    return bit / 64 < words_.size() && (words_[bit / 64] >> (bit % 64) & 1) != 0;
}

bool BitVector::empty() const {
    return std::all_of(words_.begin(), words_.end(), [](uint64_t w) { return w == 0; });
}

void BitVector::and_with(const BitVector &o) {
    if (words_.size() > o.words_.size()) words_.resize(o.words_.size());
    for (size_t i = 0; i < words_.size(); ++i)
        words_[i] &= o.words_[i];
}

void BitVector::or_with(const BitVector &o) {
    if (words_.size() < o.words_.size()) words_.resize(o.words_.size(), 0);
    for (size_t i = 0; i < o.words_.size(); ++i)
        words_[i] |= o.words_[i];
}

std::vector<uint32_t> BitVector::bits() const {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < words_.size(); ++i)
        for (uint64_t w = words_[i]; w != 0; w &= w - 1)
            out.push_back(static_cast<uint32_t>(i * 64 + __builtin_ctzll(w)));
    return out;
}

namespace {

void write_bits(WireWriter &w, const BitVector &b) {
    size_t n = b.words().size();
    while (n > 0 && b.words()[n - 1] == 0)
        --n;
    w.array(b.words().data(), n);
}

BitVector read_bits(WireReader &r) {
    BitVector b;
    b.words() = r.array<uint64_t>(ResponseCache::kMaxBits / 64, "cache vote bit vector");
    return b;
}

// A vote and an outcome share one layout: the round; per process set, in ascending ids, its
// ready bits, its invalid bits and its join flag; then rank 0's batches, fusion threshold and
// hierarchical op types. `ready` and `joined` name the entry's fields of the two meanings.
template <class Message, class Entry>
std::string encode_round(const Message &m, BitVector Entry::*ready, bool Entry::*joined) {
    WireWriter w;
    w.u64(m.round);
    w.u64(m.sets.size());
    for (const Entry &e : m.sets) {
        w.u64(e.set_id);
        write_bits(w, e.*ready);
        write_bits(w, e.invalid);
        w.u8(e.*joined ? 1 : 0);
    }
    w.u64(m.batches);
    w.i64(m.fusion_threshold);
    w.u32(m.hierarchical_ops);
    return std::move(w.bytes());
}

// `what` names the message in errors ("vote", "outcome").
template <class Message, class Entry>
Message decode_round(const std::string &bytes, BitVector Entry::*ready, bool Entry::*joined,
                     const char *what) {
    WireReader r(bytes);
    Message m;
    m.round = r.u64();
    const uint64_t n = r.u64();
    if (n > kMaxSetId + 1)
        throw Error(HVD_ERR_TRANSPORT, strprintf("malformed cache %s (%llu process sets)", what,
                                                 static_cast<unsigned long long>(n)));
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t id = r.u64();
        if (id > kMaxSetId || (i > 0 && id <= m.sets.back().set_id))
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("malformed cache %s (process set %llu out of order)", what,
                                  static_cast<unsigned long long>(id)));
        Entry e;
        e.set_id = static_cast<uint16_t>(id);
        e.*ready = read_bits(r);
        e.invalid = read_bits(r);
        e.*joined = r.u8() != 0;
        m.sets.push_back(std::move(e));
    }
    m.batches = r.u64();
    m.fusion_threshold = r.i64();
    m.hierarchical_ops = r.u32();
    if (!r.at_end())
        throw Error(HVD_ERR_TRANSPORT, strprintf("malformed cache %s (trailing bytes)", what));
    return m;
}

}  // namespace

std::string encode_vote(const RoundVote &v) {
    return encode_round(v, &SetVote::ready, &SetVote::joined);
}

RoundVote decode_vote(const std::string &bytes) {
    return decode_round<RoundVote>(bytes, &SetVote::ready, &SetVote::joined, "vote");
}

std::string encode_outcome(const RoundOutcome &o) {
    return encode_round(o, &SetOutcome::ready_everywhere, &SetOutcome::any_joined);
}

RoundOutcome decode_outcome(const std::string &bytes) {
    return decode_round<RoundOutcome>(bytes, &SetOutcome::ready_everywhere, &SetOutcome::any_joined,
                                      "outcome");
}

void RoundTable::add(int32_t rank, RoundVote vote, uint64_t rounds_done) {
    if (rank < 0 || rank >= size_)
        throw Error(HVD_ERR_TRANSPORT, strprintf("cache vote from unknown rank %d", rank));
    // In step: nobody can be more than two rounds ahead of a rank that has not voted yet.
    if (vote.round <= rounds_done || vote.round > rounds_done + 2)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rank %d voted in cache round %llu, this rank has finished %llu",
                              rank, static_cast<unsigned long long>(vote.round),
                              static_cast<unsigned long long>(rounds_done)));
    auto &slots = votes_[vote.round];
    slots.resize(static_cast<size_t>(size_));
    if (slots[rank])
        throw Error(HVD_ERR_TRANSPORT, strprintf("rank %d voted twice in cache round %llu", rank,
                                                 static_cast<unsigned long long>(vote.round)));
    slots[rank] = std::move(vote);
}

bool RoundTable::has_vote(uint64_t round, int32_t rank) const {
    auto it = votes_.find(round);
    return it != votes_.end() && it->second[rank].has_value();
}

bool RoundTable::complete(uint64_t round) const {
    auto it = votes_.find(round);
    if (it == votes_.end()) return false;
    return std::all_of(it->second.begin(), it->second.end(),
                       [](const std::optional<RoundVote> &v) { return v.has_value(); });
}

bool RoundTable::awaits_only(uint64_t round, int32_t rank, const SetMembers &members) const {
    auto it = votes_.find(round);
    if (it == votes_.end()) return false;
    bool any_ready = false;
    for (const std::optional<RoundVote> &v : it->second) {
        if (!v) continue;
        for (const SetVote &sv : v->sets) {
            if (sv.joined || !sv.invalid.empty()) return false;
            if (sv.ready.empty()) continue;
            const std::vector<int32_t> *ranks = members(sv.set_id);
            if (ranks == nullptr || std::find(ranks->begin(), ranks->end(), rank) == ranks->end())
                return false;
            any_ready = true;
        }
    }
    return any_ready;
}

RoundVote RoundTable::merged(uint64_t round) const {
    RoundVote out;
    auto it = votes_.find(round);
    if (it == votes_.end()) return out;
    std::map<uint16_t, SetVote> sets;
    for (const std::optional<RoundVote> &v : it->second) {
        if (!v) continue;
        for (const SetVote &sv : v->sets) {
            SetVote &m = sets[sv.set_id];
            m.set_id = sv.set_id;
            m.ready.or_with(sv.ready);
            m.invalid.or_with(sv.invalid);
            m.joined |= sv.joined;
        }
    }
    for (auto &entry : sets)
        out.sets.push_back(std::move(entry.second));
    return out;
}

RoundOutcome RoundTable::take(uint64_t round, const SetMembers &members) {
    auto it = votes_.find(round);
    std::vector<std::optional<RoundVote>> &votes = it->second;
    RoundOutcome out;
    out.round = round;
    out.batches = votes[0]->batches;  // rank 0's
    out.fusion_threshold = votes[0]->fusion_threshold;
    out.hierarchical_ops = votes[0]->hierarchical_ops;
    // Each vote's sets ascend: a cursor per vote walks them in step.
    std::vector<size_t> at(votes.size(), 0);
    for (;;) {
        uint32_t next = kMaxSetId + 1;
        for (size_t r = 0; r < votes.size(); ++r)
            if (at[r] < votes[r]->sets.size())
                next = std::min<uint32_t>(next, votes[r]->sets[at[r]].set_id);
        if (next > kMaxSetId) break;
        const uint16_t id = static_cast<uint16_t>(next);
        // This set's entry of each rank's vote (null: none), the cursors moved past it.
        std::vector<const SetVote *> entry(votes.size(), nullptr);
        for (size_t r = 0; r < votes.size(); ++r)
            if (at[r] < votes[r]->sets.size() && votes[r]->sets[at[r]].set_id == id)
                entry[r] = &votes[r]->sets[at[r]++];
        const std::vector<int32_t> *ranks = members(id);
        if (ranks == nullptr || ranks->empty()) continue;
        SetOutcome o;
        o.set_id = id;
        bool first = true;
        for (int32_t m : *ranks) {
            if (m < 0 || m >= size_) continue;
            const SetVote *e = entry[static_cast<size_t>(m)];
            if (e == nullptr) {
                o.ready_everywhere = BitVector();
                first = false;
                continue;
            }
            if (first) {
                o.ready_everywhere = e->ready;
                first = false;
            } else {
                o.ready_everywhere.and_with(e->ready);
            }
            o.invalid.or_with(e->invalid);
            o.any_joined |= e->joined;
        }
        out.sets.push_back(std::move(o));
    }
    votes_.erase(it);
    return out;
}

}  // namespace hvd::negotiation
