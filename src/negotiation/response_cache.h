// SPDX-License-Identifier: Apache-2.0
// Horovod's response cache, as every rank holds it: once the coordinator agreed on an op of
// the global process set, its response is kept under a bit number the coordinator chose.
// A later op of the same name with the same parameters is then negotiated by bit vectors
// among the ranks (cache_round.h) instead of through the coordinator. Every rank applies the
// same changes (put, erase) at the same point of the job's global order, so a bit means the
// same op everywhere between two rounds; bits changed since the last round are reported by
// touched(), because a vote cast before such a change meant the old op.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "negotiation/op_meta.h"

namespace hvd::negotiation {

// Whether two descriptions of one op by the same rank are the same op (every field the
// coordinator compares across ranks).
bool same_op(const OpMeta &a, const OpMeta &b);

class ResponseCache {
  public:
    // Bit numbers a control message may name; the capacity is at most this.
    static constexpr uint32_t kMaxBits = 1u << 16;

    enum class Lookup {
        kMiss,     // the name is not cached
        kHit,      // cached with exactly these parameters: *bit is its bit
        kChanged,  // cached, but this rank's parameters differ now: *bit must be invalidated
    };
    Lookup lookup(const OpMeta &meta, uint32_t *bit) const;

    // What a lookup found for a name, kept by the caller with the name (the engine keeps one
    // per name in flight) so that the next lookup of that name skips the search by name:
    // valid while the bit still holds what the same put() stored there.
    struct Memo {
        uint32_t bit = 0;
        uint64_t stamp = 0;  // the put's stamp; 0: nothing remembered
    };
    // As lookup(), through *memo, which it brings up to date.
    Lookup lookup(const OpMeta &meta, uint32_t *bit, Memo *memo) const;

    // Stores the agreed response under `bit`, replacing what the bit or the name held. mine:
    // this rank's own description of the op (null if it took part without enqueuing it, as
    // a joined rank does: such an entry never hits on this rank). Returns the bits changed.
    std::vector<uint32_t> put(uint32_t bit, const Response &resp, const OpMeta *mine);
    void erase(uint32_t bit);

    // The response cached under `bit`, or null.
    const Response *response(uint32_t bit) const {
        return bit < slots_.size() && slots_[bit].stamp != 0 ? &slots_[bit].response : nullptr;
    }
    size_t size() const { return by_name_.size(); }

    // Bits put or erased since the last clear_touched().
    bool touched(uint32_t bit) const { return touched_.count(bit) != 0; }
    void clear_touched() { touched_.clear(); }

    // Only ops like this are cached: data-moving ops of the global set (grouped ones too:
    // engine_cache_groups.cc keeps a group together) that succeeded for every rank.
    static bool cacheable(const Response &resp);

  private:
    // A bit's entry; indexed by the bit (bits are small numbers: no hashing).
    struct Slot {
        Response response;
        bool has_mine = false;
        OpMeta mine;
        uint64_t stamp = 0;  // which put() stored it (unique); 0: the bit is free
    };
    Lookup check(const Slot &slot, const OpMeta &meta) const {
        return slot.has_mine && same_op(slot.mine, meta) ? Lookup::kHit : Lookup::kChanged;
    }
    std::vector<Slot> slots_;
    std::unordered_map<std::string, uint32_t> by_name_;
    uint64_t last_stamp_ = 0;
    std::set<uint32_t> touched_;
};

}  // namespace hvd::negotiation
