#include "collectives/stream_copy.h"

#include <cstring>

namespace hvd::collectives {

namespace {
constexpr size_t kStreams = 4;
constexpr size_t kBlockBytes = 128;  // per stream and turn: two cache lines
constexpr size_t kMinBytes = 32 * 1024;
}  // namespace

void stream_copy(void *dst, const void *src, size_t bytes) {
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    if (bytes < kMinBytes) {
        std::memcpy(d, s, bytes);
        return;
    }
    const size_t run = bytes / (kStreams * kBlockBytes) * kBlockBytes;
    for (size_t i = 0; i < run; i += kBlockBytes)
        for (size_t k = 0; k < kStreams; ++k)
            std::memcpy(d + k * run + i, s + k * run + i, kBlockBytes);
    std::memcpy(d + kStreams * run, s + kStreams * run, bytes - kStreams * run);
}

void StreamCopies::add(void *dst, const void *src, size_t bytes) {
    if (bytes >= kMinBytes) {
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
    for (bool more = n_ > 0; more; done += kBlockBytes) {
        more = false;
        for (int k = 0; k < n_; ++k) {
            const Copy &c = held_[k];
            if (done >= c.bytes) continue;
            if (c.bytes - done >= kBlockBytes) {
                std::memcpy(c.dst + done, c.src + done, kBlockBytes);
            } else {
                std::memcpy(c.dst + done, c.src + done, c.bytes - done);
            }
            more = more || c.bytes - done > kBlockBytes;
        }
    }
    n_ = 0;
}

}  // namespace hvd::collectives
