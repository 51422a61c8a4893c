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

}  // namespace hvd::collectives
