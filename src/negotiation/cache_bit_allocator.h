// SPDX-License-Identifier: Apache-2.0
// Rank 0's choice of response-cache bits of one process set (HVD_CACHE_CAPACITY, per set): a
// newly agreed op gets its old bit, a free one, or the least recently used op's bit (LRU
// eviction). The choice travels in the response, so every member stores the op under the same
// bit; capacity is rank 0's alone. Rank 0 keeps one per set, whether it is a member or not.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace hvd::negotiation {

class CacheBitAllocator {
  public:
    // The bit for a newly agreed op named `name`, marked most recently used; -1 with a
    // capacity of 0 (cache off). A smaller capacity than before evicts the excess first.
    int32_t assign(const std::string &name, size_t capacity);
    // An op ran from the cache: its bit becomes the most recently used.
    void used(uint32_t bit);
    // The bit no longer holds `name` (invalidated); a bit reassigned meanwhile is kept.
    void release(uint32_t bit, const std::string &name);

  private:
    struct Slot {
        std::string name;
        std::list<uint32_t>::iterator lru;
    };
    std::list<uint32_t> lru_;  // front: most recently used
    std::unordered_map<uint32_t, Slot> bits_;
    std::unordered_map<std::string, uint32_t> names_;
    std::list<uint32_t> free_;  // released bits, reused before new ones
    uint32_t next_bit_ = 0;
};

}  // namespace hvd::negotiation
