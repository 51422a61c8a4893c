// SPDX-License-Identifier: Apache-2.0
// The order in which a ring algorithm's member sends or receives its pieces: at step k of a
// run of steps, block (first - k) of the n blocks (indices wrap), cut into chunks of at most
// `chunk` elements. All messages to one neighbour share a tag, so both sides must walk the
// same sequence; a cursor is that walk. Used by the ring allreduce (even blocks) and the
// ring reduce-scatter (blocks of any sizes); a hierarchical ring reuses it per level.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hvd::collectives {

// count elements in n blocks, the first count % n of them one element longer (so any may be
// empty when count < n).
struct EvenBlocks {
    size_t count;
    int32_t n;
    int32_t wrap(int32_t b) const { return (b % n + n) % n; }
    size_t begin(int32_t b) const {
        size_t i = static_cast<size_t>(wrap(b));
        return i * (count / n) + std::min(i, count % n);
    }
    size_t length(int32_t b) const {
        return count / n + (static_cast<size_t>(wrap(b)) < count % n ? 1 : 0);
    }
};

// Consecutive blocks of the given element counts (one per member, any may be 0), starting at
// the given offsets. Both arrays are borrowed.
struct UnevenBlocks {
    const std::vector<size_t> &counts;
    const size_t *offsets;
    int32_t n;
    int32_t wrap(int32_t b) const { return (b % n + n) % n; }
    size_t begin(int32_t b) const { return offsets[wrap(b)]; }
    size_t length(int32_t b) const { return counts[wrap(b)]; }
};

struct RingPiece {
    int32_t step;
    size_t offset;  // elements from the start of the buffer
    size_t stage;   // elements of the earlier steps' blocks: a place per step in a work area
    size_t count;   // elements, never 0
};

// Blocks: EvenBlocks or UnevenBlocks (begin(b) and length(b) of any block index b).
template <class Blocks>
class RingPieceCursor {
  public:
    // The pieces of `steps` steps starting at block `first`, in chunks of `chunk` elements.
    RingPieceCursor(const Blocks &blocks, size_t chunk, int32_t first, int32_t steps)
        : blocks_(blocks), chunk_(chunk), first_(first), steps_(steps) {}

    // The next piece into *p; false when the walk is over.
    bool next(RingPiece *p) {
        for (; step_ < steps_; ++step_) {
            size_t len = blocks_.length(first_ - step_);
            if (done_ < len) {
                size_t c = std::min(chunk_, len - done_);
                *p = RingPiece{step_, blocks_.begin(first_ - step_) + done_, stage_ + done_, c};
                done_ += c;
                return true;
            }
            stage_ += len;
            done_ = 0;
        }
        return false;
    }

    // How many pieces are left (walks a copy).
    size_t remaining() const {
        RingPieceCursor copy = *this;
        size_t k = 0;
        RingPiece p;
        while (copy.next(&p))
            ++k;
        return k;
    }

  private:
    Blocks blocks_;
    size_t chunk_;
    int32_t first_;
    int32_t steps_;
    int32_t step_ = 0;
    size_t done_ = 0;   // elements of the current step's block already returned
    size_t stage_ = 0;  // elements of the earlier steps' blocks
};

}  // namespace hvd::collectives
