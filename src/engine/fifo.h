// A first-in first-out queue over one vector that keeps its storage: once warm, pushing and
// popping allocate nothing, where std::deque allocates a node every two entries of a type as
// large as a Response (and frees it again when they are popped). The consumed front is
// dropped when the queue empties, or, at the next push, compacted away once it is the larger
// part, so a queue that never quite empties stays bounded. Random access is relative to the
// front. A pushed value must not be an element of the queue itself. Not thread-safe.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace hvd::engine {

template <typename T>
class Fifo {
  public:
    bool empty() const { return head_ == items_.size(); }
    size_t size() const { return items_.size() - head_; }
    T &front() { return items_[head_]; }
    T &back() { return items_.back(); }
    T &operator[](size_t i) { return items_[head_ + i]; }
    const T &operator[](size_t i) const { return items_[head_ + i]; }
    void push_back(T &&v) {
        compact();
        items_.push_back(std::move(v));
    }
    void push_back(const T &v) {
        compact();
        items_.push_back(v);
    }
    void pop_front() {
        if (++head_ == items_.size()) clear();
    }
    void clear() {
        items_.clear();
        head_ = 0;
    }

  private:
    // Before a push, not while draining (a step's queue drains whole and starts over).
    void compact() {
        if (head_ < kCompactAt || head_ * 2 < items_.size()) return;
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
    }

    static constexpr size_t kCompactAt = 64;
    std::vector<T> items_;
    size_t head_ = 0;
};

}  // namespace hvd::engine
