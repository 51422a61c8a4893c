// SPDX-License-Identifier: Apache-2.0
#include "engine/pending_ops.h"

#include <utility>

#include "common/error.h"

namespace hvd::engine {

void PendingOps::add(const RequestPtr &req) {
    if (holds(*req))
        throw Error(HVD_ERR_INTERNAL, strprintf("'%s' was reported twice", req->meta.name.c_str()));
    req->pending_slot = list_.size();
    list_.push_back(req);
    if (req->meta.type == OpType::kJoin) ++joins_[req->meta.set_id];
}

RequestPtr PendingOps::take(Request &req) {
    if (!holds(req))
        throw Error(HVD_ERR_INTERNAL, strprintf("'%s' is not pending", req.meta.name.c_str()));
    const size_t slot = req.pending_slot;
    RequestPtr taken = std::move(list_[slot]);
    if (slot + 1 != list_.size()) {
        list_[slot] = std::move(list_.back());
        list_[slot]->pending_slot = slot;
    }
    list_.pop_back();
    taken->pending_slot = Request::kNotPending;
    if (taken->meta.type == OpType::kJoin && --joins_[taken->meta.set_id] == 0)
        joins_.erase(taken->meta.set_id);
    return taken;
}

void PendingOps::clear() {
    for (const RequestPtr &r : list_)
        r->pending_slot = Request::kNotPending;
    list_.clear();
    joins_.clear();
}

Request *PendingOps::join_in(uint16_t set_id) const {
    if (joins_.count(set_id) == 0) return nullptr;
    for (const RequestPtr &r : list_)
        if (r->meta.set_id == set_id && r->meta.type == OpType::kJoin) return r.get();
    return nullptr;
}

}  // namespace hvd::engine
