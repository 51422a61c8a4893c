// SPDX-License-Identifier: Apache-2.0
// The process sets this rank knows: id -> members. Written by the engine thread when a
// create or destroy op runs, read by callers' threads at enqueue. Entries are immutable and
// shared, so a reader keeps a consistent view even while a set is being destroyed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace hvd::engine {

struct ProcessSetInfo {
    uint16_t id = 0;
    std::vector<int32_t> members;  // global ranks, ascending
    int32_t my_index = -1;         // this rank's index in members, -1 if not a member

    int32_t size() const { return static_cast<int32_t>(members.size()); }
};
using ProcessSetPtr = std::shared_ptr<const ProcessSetInfo>;

class ProcessSetTable {
  public:
    ProcessSetPtr add(uint16_t id, std::vector<int32_t> members, int32_t my_rank) {
        auto info = std::make_shared<ProcessSetInfo>();
        info->id = id;
        info->members = std::move(members);
        auto it = std::lower_bound(info->members.begin(), info->members.end(), my_rank);
        if (it != info->members.end() && *it == my_rank)
            info->my_index = static_cast<int32_t>(it - info->members.begin());
        std::lock_guard<std::mutex> lock(mu_);
        sets_[id] = info;
        if (id == 0) global_ = info;
        return info;
    }
    void remove(uint16_t id) {
        std::lock_guard<std::mutex> lock(mu_);
        sets_.erase(id);
    }
    // Null if unknown.
    ProcessSetPtr find(uint16_t id) const {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = sets_.find(id);
        return it == sets_.end() ? nullptr : it->second;
    }

    // Set 0, every rank, without the lock: the engine adds it once, before any caller can
    // enqueue, and it is never removed or replaced (find(0) without the lock's cost, which
    // showed in every enqueue's profile).
    const ProcessSetPtr &global() const { return global_; }

  private:
    mutable std::mutex mu_;
    std::map<uint16_t, ProcessSetPtr> sets_;
    ProcessSetPtr global_;
};

}  // namespace hvd::engine
