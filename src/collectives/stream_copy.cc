// SPDX-License-Identifier: Apache-2.0
#include "collectives/stream_copy.h"

#include <cstring>

#include "common/streams.h"

namespace hvd::collectives {

void stream_copy(void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return;  // an empty tensor's pointers may be null: no memcpy of them
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    if (bytes < kStreamMinBytes) {
        std::memcpy(d, s, bytes);
        return;
    }
    in_streams<char>(bytes, [&](size_t at, size_t len) { std::memcpy(d + at, s + at, len); });
}

void StreamCopies::add(void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return;
    if (bytes >= kStreamMinBytes) {
        stream_copy(dst, src, bytes);
        return;
    }
    held_[n_++] = {static_cast<char *>(dst), static_cast<const char *>(src), bytes};
    if (n_ == kStreams) finish();
}

void StreamCopies::finish() {
    if (n_ == 1) {  // nothing to interleave it with
        std::memcpy(held_[0].dst, held_[0].src, held_[0].bytes);
        n_ = 0;
        return;
    }
    size_t done = 0;
    for (bool more = n_ > 0; more; done += kStreamBlockBytes) {
        more = false;
        for (int k = 0; k < n_; ++k) {
            const Copy &c = held_[k];
            if (done >= c.bytes) continue;
            if (c.bytes - done >= kStreamBlockBytes) {
                std::memcpy(c.dst + done, c.src + done, kStreamBlockBytes);
            } else {
                std::memcpy(c.dst + done, c.src + done, c.bytes - done);
            }
            more = more || c.bytes - done > kStreamBlockBytes;
        }
    }
    n_ = 0;
}

}  // namespace hvd::collectives
