// SPDX-License-Identifier: Apache-2.0
// The live requests behind hvd's integer handles, by handle. Handles are handed out in
// increasing order and mostly synchronized in about that order, so the recent ones sit in a
// window indexed by handle (no hashing, no allocation per handle but the deque's block every
// few dozen); a handle left behind by a full window moves to a hash map, so a handle never
// synchronized costs its entry only, not a window that grows behind it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hvd_py {

template <class T>
class HandleMap {
  public:
    // Handles from `first` on; the window holds at most `window` handles.
    explicit HandleMap(int64_t first = 1, size_t window = 4096)
        : first_(first), next_(first), window_(window) {}

    // The handle add() gives next.
    int64_t next() const { return next_; }

    // The next handle, holding v.
    int64_t add(std::shared_ptr<T> v) {
        if (recent_.size() >= window_) retire_front();
        recent_.push_back(std::move(v));
        return next_++;
    }

    // The entry of handle h, or nullptr.
    std::shared_ptr<T> find(int64_t h) const {
        if (h >= first_ && h < next_) return recent_[static_cast<size_t>(h - first_)];
        auto it = old_.find(h);
        return it == old_.end() ? nullptr : it->second;
    }

    // Takes handle h's entry out; false if it has none.
    bool erase(int64_t h) {
        if (h >= first_ && h < next_) {
            std::shared_ptr<T> &slot = recent_[static_cast<size_t>(h - first_)];
            if (slot == nullptr) return false;
            slot.reset();
            while (!recent_.empty() && recent_.front() == nullptr) {
                recent_.pop_front();
                ++first_;
            }
            return true;
        }
        return old_.erase(h) != 0;
    }

    // Moves every entry to out and empties the map; handles go on from where they were.
    void take_all(std::vector<std::shared_ptr<T>> *out) {
        for (std::shared_ptr<T> &v : recent_)
            if (v != nullptr) out->push_back(std::move(v));
        for (auto &entry : old_)
            out->push_back(std::move(entry.second));
        recent_.clear();
        old_.clear();
        first_ = next_;
    }

    size_t size() const {
        size_t n = old_.size();
        for (const std::shared_ptr<T> &v : recent_)
            n += v != nullptr ? 1 : 0;
        return n;
    }

  private:
    // The oldest handle of the window leaves it, for the hash map if it is still live.
    void retire_front() {
        if (recent_.front() != nullptr) old_.emplace(first_, std::move(recent_.front()));
        recent_.pop_front();
        ++first_;
        while (!recent_.empty() && recent_.front() == nullptr) {
            recent_.pop_front();
            ++first_;
        }
    }

    std::deque<std::shared_ptr<T>> recent_;  // handles [first_, next_)
    std::unordered_map<int64_t, std::shared_ptr<T>> old_;
    int64_t first_;
    int64_t next_;
    size_t window_;
};

}  // namespace hvd_py
