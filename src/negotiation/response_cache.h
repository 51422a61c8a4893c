// SPDX-License-Identifier: Apache-2.0
// Horovod's response cache of one process set, as each member of the set holds it: once the
// coordinator agreed on an op of the set, its response is kept under a bit number the
// coordinator chose in the set's own bit space. A later op of the same name with the same
// parameters is then negotiated by bit vectors among the set's members (cache_round.h)
// instead of through the coordinator. Every member applies the same changes (put, erase) at
// the same point of the job's global order (a set's responses reach all its members at the
// same point relative to the rounds), so a bit means the same op on every member between
// two rounds; bits changed since the last round are reported by touched(), because a vote
// cast before such a change meant the old op. Non-members hold no cache of the set: bit
// spaces are per set because they never see the set's responses.
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
    // The cache of process set `set_id`: it holds and finds ops of that set only.
    explicit ResponseCache(uint16_t set_id = 0) : set_id_(set_id) {}
    uint16_t set_id() const { return set_id_; }

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
    // The bits that hold an op, ascending.
    std::vector<uint32_t> bits() const;

    // Bits put or erased since the last clear_touched().
    bool touched(uint32_t bit) const { return touched_.count(bit) != 0; }
    void clear_touched() { touched_.clear(); }

    // Only ops like this are cached: data-moving ops (grouped ones too:
    // cache_negotiator_groups.cc keeps a group together) that succeeded for every member.
    static bool cacheable(const Response &resp);

  private:
    // A bit's entry; indexed by the bit (bits are small numbers: no hashing).
    struct Slot {
        Response response;
        bool has_mine = false;
        OpMeta mine;
        // Which put() stored it, unique in the process (a memo made with another cache never
        // matches); 0: the bit is free.
        uint64_t stamp = 0;
    };
    Lookup check(const Slot &slot, const OpMeta &meta) const {
        return slot.has_mine && same_op(slot.mine, meta) ? Lookup::kHit : Lookup::kChanged;
    }
    uint16_t set_id_;
    std::vector<Slot> slots_;
    std::unordered_map<std::string, uint32_t> by_name_;
    std::set<uint32_t> touched_;
};

}  // namespace hvd::negotiation
