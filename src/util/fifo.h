// SPDX-License-Identifier: Apache-2.0
// A first-in first-out queue over one vector that keeps its storage: once warm, pushing and
// popping allocate nothing, where std::deque allocates a node every two entries of a type as
// large as a Response (and frees it again when they are popped). A popped element is not
// destroyed: it stays in its slot, and a later push assigns into it, so the strings and
// vectors it owned are reused too (a Response copied from the response cache then needs no
// allocation for its name). Take out of front() what must not linger before popping it. The
// consumed front is dropped when the queue empties, or, at the next push, compacted away once
// it is the larger part, so a queue that never quite empties stays bounded. Random access is
// relative to the front, and the elements in the queue are contiguous. A pushed value must
// not be an element of the queue itself. Not thread-safe.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace hvd::util {

template <typename T>
class Fifo {
  public:
    bool empty() const { return head_ == end_; }
    size_t size() const { return end_ - head_; }
    T &front() { return items_[head_]; }
    T &back() { return items_[end_ - 1]; }
    T &operator[](size_t i) { return items_[head_ + i]; }
    const T &operator[](size_t i) const { return items_[head_ + i]; }
    void push_back(T &&v) { slot() = std::move(v); }
    void push_back(const T &v) { slot() = v; }
    void pop_front() { pop_front(1); }
    // Pops the first n (<= size()) elements.
    void pop_front(size_t n) {
        head_ += n;
        if (head_ == end_) head_ = end_ = 0;  // the slots stay, for the next pushes
    }
    // Empties the queue and destroys every element, spare slots included.
    void clear() {
        items_.clear();
        head_ = end_ = 0;
    }

  private:
    // The slot for a push: a spare one, or a new one.
    T &slot() {
        compact();
        if (end_ == items_.size()) items_.emplace_back();
        return items_[end_++];
    }
    // Before a push, not while draining (a step's queue drains whole and starts over).
    void compact() {
        if (head_ < kCompactAt || head_ * 2 < end_) return;
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
        end_ -= head_;
        head_ = 0;
    }

    static constexpr size_t kCompactAt = 64;
    std::vector<T> items_;  // [head_, end_) queued; [end_, size()) spare
    size_t head_ = 0;
    size_t end_ = 0;
};

}  // namespace hvd::util
