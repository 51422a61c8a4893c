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

#include "engine/op_meta.h"

namespace hvd::engine {

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

    // Stores the agreed response under `bit`, replacing what the bit or the name held. mine:
    // this rank's own description of the op (null if it took part without enqueuing it, as
    // a joined rank does: such an entry never hits on this rank). Returns the bits changed.
    std::vector<uint32_t> put(uint32_t bit, const Response &resp, const OpMeta *mine);
    void erase(uint32_t bit);

    // The response cached under `bit`, or null.
    const Response *response(uint32_t bit) const;
    size_t size() const { return by_bit_.size(); }

    // Bits put or erased since the last clear_touched().
    bool touched(uint32_t bit) const { return touched_.count(bit) != 0; }
    void clear_touched() { touched_.clear(); }

    // Only ops like this are cached: data-moving ops of the global set, not grouped, that
    // succeeded for every rank.
    static bool cacheable(const Response &resp);

  private:
    struct Entry {
        Response response;
        bool has_mine = false;
        OpMeta mine;
    };
    std::unordered_map<uint32_t, Entry> by_bit_;
    std::unordered_map<std::string, uint32_t> by_name_;
    std::set<uint32_t> touched_;
};

// Whether two descriptions of one op by the same rank are the same op (every field the
// coordinator compares across ranks).
bool same_op(const OpMeta &a, const OpMeta &b);

}  // namespace hvd::engine
