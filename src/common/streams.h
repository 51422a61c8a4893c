// Walking a large array as several interleaved streams, a block of each in turn: a core
// reading what another core has just written (the shared-memory collectives read their peers'
// slots) keeps more of those slow misses in flight along several sequential streams than
// along one. Two threads on this VM, 128 KiB the other core just wrote: copied, memcpy
// 18.4-20 GB/s, four streams 22-24 GB/s; a float32 sum with one such input, one stream
// 18.2 GB/s, four 24 GB/s (64-byte blocks 11.4 GB/s: too short a loop; eight streams or
// 256-byte blocks: no better). Used by the reduction kernels and collectives/stream_copy.
#pragma once

#include <cstddef>

namespace hvd {

constexpr size_t kStreams = 4;
constexpr size_t kStreamBlockBytes = 128;  // per stream and turn: two cache lines
// Not below: a 32 KiB allreduce of 2 ranks took 8.0 -> 10.3 us with streams from 16 KiB.
constexpr size_t kStreamMinBytes = 32 * 1024;

// fn(offset, len) over [0, n) elements of T: kStreams equal runs of whole blocks, interleaved
// block by block, then the rest in one piece.
template <class T, class F>
void in_streams(size_t n, F &&fn) {
    constexpr size_t block = kStreamBlockBytes / sizeof(T);
    const size_t run = n / (kStreams * block) * block;
    for (size_t i = 0; i < run; i += block)
        for (size_t k = 0; k < kStreams; ++k)
            fn(k * run + i, block);
    if (n > kStreams * run) fn(kStreams * run, n - kStreams * run);
}

}  // namespace hvd
