// SPDX-License-Identifier: Apache-2.0
#include "negotiation/cache_bit_allocator.h"

#include "negotiation/response_cache.h"

namespace hvd::negotiation {

int32_t CacheBitAllocator::assign(const std::string &name, size_t capacity) {
    if (capacity > ResponseCache::kMaxBits) capacity = ResponseCache::kMaxBits;
    auto known = names_.find(name);
    if (known != names_.end()) {
        uint32_t bit = known->second;
        used(bit);
        return static_cast<int32_t>(bit);
    }
    while (!bits_.empty() && bits_.size() >= capacity) {
        uint32_t victim = lru_.back();
        release(victim, bits_.at(victim).name);
    }
    if (capacity == 0) return -1;
    uint32_t bit;
    if (!free_.empty()) {
        bit = free_.front();
        free_.pop_front();
    } else {
        bit = next_bit_++;
    }
    lru_.push_front(bit);
    bits_[bit] = Slot{name, lru_.begin()};
    names_[name] = bit;
    return static_cast<int32_t>(bit);
}

void CacheBitAllocator::used(uint32_t bit) {
    auto it = bits_.find(bit);
    if (it == bits_.end()) return;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
}

void CacheBitAllocator::release(uint32_t bit, const std::string &name) {
    auto it = bits_.find(bit);
    if (it == bits_.end() || it->second.name != name) return;
    lru_.erase(it->second.lru);
    names_.erase(name);
    bits_.erase(it);
    free_.push_back(bit);
}

}  // namespace hvd::negotiation
