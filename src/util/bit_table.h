// SPDX-License-Identifier: Apache-2.0
// A map from small integer keys (response cache bits, below ResponseCache::kMaxBits) to values,
// kept as a vector indexed by the key: no hashing, and no allocation once it has grown to the
// largest key used. The engine keeps the requests waiting on cache bits in one; a step adds,
// finds and removes one entry per tensor. Iteration visits the keys present in no particular
// order. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hvd::util {

template <class T>
class BitTable {
  public:
    // Stores value under key unless the key is present; true if stored.
    bool try_emplace(uint32_t key, T value) {
        if (key >= slot_.size()) {  // values_ first: slot_ never covers a key values_ lacks
            values_.resize(static_cast<size_t>(key) + 1);
            slot_.resize(static_cast<size_t>(key) + 1, kAbsent);
        }
        if (slot_[key] != kAbsent) return false;
        slot_[key] = static_cast<int32_t>(keys_.size());
        keys_.push_back(key);
        values_[key] = std::move(value);
        return true;
    }

    // The value under key, or null.
    T *find(uint32_t key) {
        return key < slot_.size() && slot_[key] != kAbsent ? &values_[key] : nullptr;
    }

    // Removes key (if present) and resets its value, releasing what it held.
    void erase(uint32_t key) {
        if (key >= slot_.size() || slot_[key] == kAbsent) return;
        const int32_t at = slot_[key];
        const uint32_t last = keys_.back();
        keys_[static_cast<size_t>(at)] = last;
        slot_[last] = at;
        keys_.pop_back();
        slot_[key] = kAbsent;
        values_[key] = T();
    }

    bool empty() const { return keys_.empty(); }
    size_t size() const { return keys_.size(); }
    // Some key present (the table must not be empty).
    uint32_t any_key() const { return keys_.back(); }

    void clear() {
        for (uint32_t key : keys_) {
            slot_[key] = kAbsent;
            values_[key] = T();
        }
        keys_.clear();
    }

    // fn(key, value&) for every key present; fn must not add or remove keys.
    template <class F>
    void for_each(F &&fn) {
        for (uint32_t key : keys_)
            fn(key, values_[key]);
    }

  private:
    static constexpr int32_t kAbsent = -1;
    std::vector<T> values_;      // by key
    std::vector<int32_t> slot_;  // by key: its index in keys_, or kAbsent
    std::vector<uint32_t> keys_;
};

}  // namespace hvd::util
