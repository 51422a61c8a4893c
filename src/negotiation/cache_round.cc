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

}  // namespace

std::string encode_vote(const RoundVote &v) {
    WireWriter w;
    w.u64(v.round);
    write_bits(w, v.ready);
    write_bits(w, v.invalid);
    w.u8(v.joined ? 1 : 0);
    w.u64(v.batches);
    w.i64(v.fusion_threshold);
    return std::move(w.bytes());
}

RoundVote decode_vote(const std::string &bytes) {
    WireReader r(bytes);
    RoundVote v;
    v.round = r.u64();
    v.ready = read_bits(r);
    v.invalid = read_bits(r);
    v.joined = r.u8() != 0;
    v.batches = r.u64();
    v.fusion_threshold = r.i64();
    if (!r.at_end()) throw Error(HVD_ERR_TRANSPORT, "malformed cache vote (trailing bytes)");
    return v;
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

RoundOutcome RoundTable::take(uint64_t round) {
    auto it = votes_.find(round);
    RoundOutcome out;
    bool first = true;
    for (const std::optional<RoundVote> &v : it->second) {
        if (first) {
            out.ready_everywhere = v->ready;
            out.batches = v->batches;  // rank 0's
            out.fusion_threshold = v->fusion_threshold;
            first = false;
        } else {
            out.ready_everywhere.and_with(v->ready);
        }
        out.invalid.or_with(v->invalid);
        out.any_joined |= v->joined;
    }
    votes_.erase(it);
    return out;
}

}  // namespace hvd::negotiation
