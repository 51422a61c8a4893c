// SPDX-License-Identifier: Apache-2.0
// A copy that reads its source as several interleaved streams (common/streams.h), for data
// another core has just written (the shared-memory collectives' slots).
#pragma once

#include <cstddef>

#include "common/streams.h"

namespace hvd::collectives {

// memcpy(dst, src, bytes), in streams from kStreamMinBytes up. dst and src must not overlap;
// with bytes 0 either may be null.
void stream_copy(void *dst, const void *src, size_t bytes);

// Many short copies (the tensors of a fused op), kStreams at a time with their blocks interleaved
// as stream_copy interleaves one long copy's. add() may copy at once (long copies) or keep the
// copy for later; finish() (or the destructor) does what is left. Not thread-safe; the buffers
// must stay valid until then.
class StreamCopies {
  public:
    StreamCopies() = default;
    StreamCopies(const StreamCopies &) = delete;
    StreamCopies &operator=(const StreamCopies &) = delete;
    ~StreamCopies() { finish(); }

    void add(void *dst, const void *src, size_t bytes);
    void finish();

  private:
    struct Copy {
        char *dst;
        const char *src;
        size_t bytes;
    };
    Copy held_[kStreams];
    int n_ = 0;
};

}  // namespace hvd::collectives
