// SPDX-License-Identifier: Apache-2.0
// The response cache's view of the process sets. Creating and destroying a set are ops of
// the global set: every rank schedules them at the same point of the agreed order, and
// that is where this rank's view changes (before the runner applies them to the process set
// table). A member gets an empty cache of the new set; a destroyed set's cache and the ops
// waiting on it are dropped (the runner fails those requests as it runs the destroy). Votes
// of the round that follows such a change may have meant the set as it was, so that round
// leaves the set out and its members vote again.
#include <memory>
#include <vector>

#include "engine/cache_negotiator.h"
#include "negotiation/control_tags.h"

namespace hvd::engine {

negotiation::CacheBitAllocator *CacheNegotiator::cache_bits(uint16_t set_id) {
    if (parts_.rank != negotiation::kCoordinator) return nullptr;
    return &cache_bits_[set_id];
}

const std::vector<int32_t> *CacheNegotiator::members(uint16_t id) const {
    auto it = members_.find(id);
    return it == members_.end() ? nullptr : &it->second;
}

void CacheNegotiator::set_created(uint16_t id, const std::vector<int32_t> &ranks) {
    if (id == 0) return;
    members_[id] = ranks;
    sets_changed_.insert(id);
    sets_.erase(id);
    for (int32_t m : ranks)
        if (m == parts_.rank) sets_.emplace(id, std::make_unique<SetCache>(id));
}

void CacheNegotiator::set_destroyed(uint16_t id) {
    if (id == 0) return;
    members_.erase(id);
    sets_.erase(id);
    sets_changed_.insert(id);
    cache_bits_.erase(id);
}

void CacheNegotiator::mark_used_elsewhere(const negotiation::SetOutcome &outcome) {
    if (parts_.rank != negotiation::kCoordinator) return;
    auto it = cache_bits_.find(outcome.set_id);
    if (it == cache_bits_.end()) return;
    for (uint32_t bit : outcome.ready_everywhere.bits())
        if (!outcome.invalid.test(bit)) it->second.used(bit);
}

}  // namespace hvd::engine
