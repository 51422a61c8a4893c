// SPDX-License-Identifier: Apache-2.0
// The names of the ops a rank has enqueued and not yet finished, per process set: a second op
// of a name in flight is refused (Horovod's rule). A training loop enqueues the same names
// every step, so an entry stays when its op finishes and is marked in flight again by the
// next: an enqueue is one lookup that allocates nothing, and a finish is no lookup at all
// (the request keeps its entry). Idle entries are swept once the table has grown well past
// the names in flight, so ops named uniquely each time (auto-named ones) keep it bounded.
// Not thread-safe: the engine uses it under its queue mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

#include "negotiation/response_cache.h"

namespace hvd::engine {

class Request;

struct InFlightEntry {
    bool in_flight = false;
    Request *request = nullptr;  // the op in flight, set by its enqueue
    // Engine thread only: what the response cache last found for this name.
    negotiation::ResponseCache::Memo cache_memo;
};

class InFlightNames {
  public:
    using Entry = InFlightEntry;

    // Marks (set_id, name) in flight and returns its entry, or null if it already was.
    // Entries stay where they are until swept, and a swept entry is never in flight.
    Entry *enter(uint16_t set_id, const std::string &name);
    // Ends the op of an entry enter() returned.
    void leave(Entry *entry) {
        entry->in_flight = false;
        entry->request = nullptr;
        --in_flight_;
    }
    // The op of that name in flight, or null.
    Request *find(uint16_t set_id, const std::string &name) const;

    size_t size() const { return size_; }  // entries, idle ones included
    size_t in_flight() const { return in_flight_; }

    // The table is swept of idle entries once it holds 2 x (kMinKept + the names in flight):
    // a few steps' worth of a large model's names stay.
    static constexpr size_t kMinKept = 4096;

  private:
    using Table = std::unordered_map<std::string, Entry>;
    Table &table(uint16_t set_id) { return set_id == 0 ? global_ : others_[set_id]; }
    const Table *find_table(uint16_t set_id) const;
    void sweep();

    Table global_;  // process set 0: almost every op
    std::map<uint16_t, Table> others_;
    size_t size_ = 0;
    size_t in_flight_ = 0;
};

}  // namespace hvd::engine
