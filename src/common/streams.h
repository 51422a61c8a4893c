// SPDX-License-Identifier: Apache-2.0
// Walking a large array as several interleaved streams, a block of each in turn: a core
// reading what another core has just written (the shared-memory collectives read their peers'
// slots) keeps more of those slow misses in flight along several sequential streams than
// along one. Measured with two threads on 128 KiB the other core just wrote: four streams beat
// one, for a copy and for a float32 sum alike (64-byte blocks are too short a loop; eight
// streams or 256-byte blocks did no better). Used by the reduction kernels and
// collectives/stream_copy.
#pragma once

#include <cstddef>

namespace hvd {

constexpr size_t kStreams = 4;
constexpr size_t kStreamBlockBytes = 128;  // per stream and turn: two cache lines
// Not below: streams from 16 KiB made a 32 KiB allreduce of 2 ranks slower.
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
