// SPDX-License-Identifier: Apache-2.0
#include "engine/in_flight_names.h"

#include <iterator>

namespace hvd::engine {

InFlightNames::Entry *InFlightNames::enter(uint16_t set_id, const std::string &name) {
    if (size_ >= 2 * (kMinKept + in_flight_)) sweep();
    Table &t = table(set_id);
    auto [it, added] = t.try_emplace(name);
    if (added) {
        ++size_;
    } else if (it->second.in_flight) {
        return nullptr;
    }
    it->second.in_flight = true;
    ++in_flight_;
    return &it->second;
}

const InFlightNames::Table *InFlightNames::find_table(uint16_t set_id) const {
    if (set_id == 0) return &global_;
    auto it = others_.find(set_id);
    return it == others_.end() ? nullptr : &it->second;
}

Request *InFlightNames::find(uint16_t set_id, const std::string &name) const {
    const Table *t = find_table(set_id);
    if (t == nullptr) return nullptr;
    auto it = t->find(name);
    return it == t->end() || !it->second.in_flight ? nullptr : it->second.request;
}

// Erasing other elements leaves the entries in flight where they are: the requests that hold
// them stay valid.
void InFlightNames::sweep() {
    auto sweep_table = [this](Table &t) {
        for (auto it = t.begin(); it != t.end();) {
            if (it->second.in_flight) {
                ++it;
                continue;
            }
            it = t.erase(it);
            --size_;
        }
    };
    sweep_table(global_);
    for (auto it = others_.begin(); it != others_.end();) {
        sweep_table(it->second);
        it = it->second.empty() ? others_.erase(it) : std::next(it);
    }
}

}  // namespace hvd::engine
