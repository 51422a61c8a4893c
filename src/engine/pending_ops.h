// SPDX-License-Identifier: Apache-2.0
// The requests a rank has reported (to the coordinator or to a cache round) and not yet run.
// Each request keeps its own place in the list, so adding and taking one is a few stores:
// no hashing of its name and no allocation once warm (a 256-tensor step adds and takes 256
// every step). Finding one by name is the engine's business: the names in flight know
// their request (in_flight_names.h). Joins are counted per process set, because a rank
// that has joined a set takes part in the others' ops there. Not thread-safe: engine
// thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "engine/request.h"

namespace hvd::engine {

class PendingOps {
  public:
    // Adds req, which must not be in any list.
    void add(const RequestPtr &req);
    // Whether req is in this list.
    bool holds(const Request &req) const {
        return req.pending_slot < list_.size() && list_[req.pending_slot].get() == &req;
    }
    // The list's reference to req, or null if it does not hold req.
    RequestPtr shared(const Request &req) const {
        return holds(req) ? list_[req.pending_slot] : nullptr;
    }
    // Takes req (which must be held) out of the list and returns it.
    RequestPtr take(Request &req);

    bool empty() const { return list_.empty(); }
    size_t size() const { return list_.size(); }
    // In no particular order; taking a request reorders the list.
    const std::vector<RequestPtr> &all() const { return list_; }
    // Drops every request (their slots are reset).
    void clear();

    // This rank's join in the set, or null.
    Request *join_in(uint16_t set_id) const;

  private:
    std::vector<RequestPtr> list_;
    std::map<uint16_t, int> joins_;  // joins in the list, by set
};

}  // namespace hvd::engine
