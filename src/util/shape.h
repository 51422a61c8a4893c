// SPDX-License-Identifier: Apache-2.0
// A tensor's dimensions. Up to kInlineDims of them live inside the object, so copying the
// shape of a typical tensor (into a request, its metadata, a response) allocates nothing;
// longer shapes go to the heap. The interface is the part of std::vector the engine uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace hvd::util {

class Shape {
  public:
    static constexpr size_t kInlineDims = 6;

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
    Shape(const std::vector<int64_t> &dims) { assign(dims.data(), dims.data() + dims.size()); }
    Shape(const Shape &o) { assign(o.begin(), o.end()); }
    Shape &operator=(const Shape &o) {
        if (this != &o) assign(o.begin(), o.end());
        return *this;
    }
    Shape(Shape &&o) noexcept { *this = std::move(o); }
    Shape &operator=(Shape &&o) noexcept {
        if (this == &o) return *this;
        size_ = o.size_;
        heap_ = std::move(o.heap_);
        if (!heap_) std::copy(o.inline_, o.inline_ + size_, inline_);
        o.size_ = 0;
        return *this;
    }

    void assign(const int64_t *first, const int64_t *last) {
        size_t n = static_cast<size_t>(last - first);
        if (n > kInlineDims) {
            std::unique_ptr<int64_t[]> heap(new int64_t[n]);
            std::copy(first, last, heap.get());
            heap_ = std::move(heap);
        } else {
            std::copy(first, last, inline_);  // before heap_ goes: first may point into it
            heap_.reset();
        }
        size_ = n;
    }

    void clear() {
        heap_.reset();
        size_ = 0;
    }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    int64_t *data() { return heap_ ? heap_.get() : inline_; }
    const int64_t *data() const { return heap_ ? heap_.get() : inline_; }
    int64_t *begin() { return data(); }
    int64_t *end() { return data() + size_; }
    const int64_t *begin() const { return data(); }
    const int64_t *end() const { return data() + size_; }
    int64_t &operator[](size_t i) { return data()[i]; }
    const int64_t &operator[](size_t i) const { return data()[i]; }

    bool operator==(const Shape &o) const { return std::equal(begin(), end(), o.begin(), o.end()); }
    bool operator!=(const Shape &o) const { return !(*this == o); }

  private:
    size_t size_ = 0;
    // Only the first size_ are ever read: not zero-filled (a fill per shape showed in the
    // enqueue's profile).
    int64_t inline_[kInlineDims];
    std::unique_ptr<int64_t[]> heap_;  // set when size_ > kInlineDims
};

// The size of a tensor (or of its rows) in bytes: `scale` (the element size) times the
// dimensions [first, last), every product checked. Zero dimensions are skipped, so that any
// part of a shape that passes (one row, one column) has a size that fits too. Returns the
// index of the first negative dimension or of the one whose product passes INT64_MAX, or
// kSizeFits with *bytes set.
constexpr size_t kSizeFits = SIZE_MAX;
inline size_t checked_size(const int64_t *first, const int64_t *last, int64_t scale,
                           int64_t *bytes) {
    int64_t n = scale;
    for (const int64_t *d = first; d != last; ++d) {
        if (*d < 0) return static_cast<size_t>(d - first);
        if (*d != 0 && __builtin_mul_overflow(n, *d, &n)) return static_cast<size_t>(d - first);
    }
    for (const int64_t *d = first; d != last; ++d)
        if (*d == 0) n = 0;
    *bytes = n;
    return kSizeFits;
}

}  // namespace hvd::util
