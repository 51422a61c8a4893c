// SPDX-License-Identifier: Apache-2.0
// A binomial tree over n members rooted at `root`: members are numbered relative to the root
// (v = index - root mod n); v's parent is v minus its lowest set bit, its children are
// v + 2^j for every 2^j below that bit (the root: below n), largest subtree first.
// ceil(log2 n) levels. Used by the tree broadcast; a reduction up the same tree is its mirror.
#pragma once

#include <cstdint>

namespace hvd::collectives {

class BinomialTree {
  public:
    BinomialTree(int32_t n, int32_t root, int32_t index)
        : n_(n), root_(root), v_((index - root + n) % n), span_(subtree_span(v_, n)) {}

    bool is_root() const { return v_ == 0; }
    // The parent's member index (not for the root).
    int32_t parent() const { return member(v_ - span_); }
    // The children, largest subtree first: for (int32_t k = 0; k < children(); ++k) child(k).
    int32_t children() const {
        int32_t c = 0;
        for (int32_t step = span_ / 2; step >= 1; step /= 2)
            if (v_ + step < n_) ++c;
        return c;
    }
    int32_t child(int32_t k) const {
        for (int32_t step = span_ / 2; step >= 1; step /= 2)
            if (v_ + step < n_ && k-- == 0) return member(v_ + step);
        return -1;  // k >= children()
    }

  private:
    // Lowest set bit of v; for the root (v = 0) the first power of two >= n, so that every
    // other member is in its subtree.
    static int32_t subtree_span(int32_t v, int32_t n) {
        if (v != 0) return v & -v;
        int32_t span = 1;
        while (span < n)
            span *= 2;
        return span;
    }
    int32_t member(int32_t rel) const { return (rel + root_) % n_; }

    int32_t n_;
    int32_t root_;
    int32_t v_;
    int32_t span_;
};

}  // namespace hvd::collectives
