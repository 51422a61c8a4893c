// SPDX-License-Identifier: Apache-2.0
#include "engine/staged_chunks.h"

#include <algorithm>

#include "common/error.h"

namespace hvd::engine {

namespace {

constexpr size_t kMiB = size_t{1} << 20;
// Up to this size the run is one chunk: a chunk's fixed costs (a CPU collective, an event
// waited on, two more copy launches) would outweigh what overlapping saves.
constexpr size_t kWholeMaxBytes = 4 * kMiB;
// Larger runs are cut into about this many chunks of whole MiB, at most kMaxChunkBytes each:
// a pipeline of four chunks hides about three quarters of the copies, and 8 MiB keeps each
// chunk's copy (about 150 us over PCIe Gen5) long against its fixed costs.
constexpr size_t kChunksWanted = 4;
constexpr size_t kMaxChunkBytes = 8 * kMiB;

}  // namespace

size_t staged_chunk_bytes(size_t bytes) {
    if (bytes <= kWholeMaxBytes) return bytes;
    const size_t quarter = (bytes + kChunksWanted - 1) / kChunksWanted;
    return std::min((quarter + kMiB - 1) / kMiB * kMiB, kMaxChunkBytes);
}

size_t staged_chunk_count(size_t bytes, size_t chunk_bytes) {
    if (bytes == 0) return 0;
    return chunk_bytes == 0 ? 1 : (bytes + chunk_bytes - 1) / chunk_bytes;
}

size_t staged_piece_bytes(size_t block_bytes, size_t chunks) {
    constexpr size_t kAlign = 256;
    if (chunks == 0) return 0;
    const size_t piece = (block_bytes + chunks - 1) / chunks;
    return (piece + kAlign - 1) / kAlign * kAlign;
}

hvd_status_t run_staged_chunks(const collectives::Comm &comm, size_t bytes, size_t chunk_bytes,
                               const std::string &what, StagedChunks *chunks,
                               const ChunkCollective &collective, std::string *message) {
    const size_t n = staged_chunk_count(bytes, chunk_bytes);
    if (chunk_bytes == 0) chunk_bytes = bytes;
    for (size_t k = 0; k < n; ++k) {
        const size_t offset = k * chunk_bytes;
        const StagedChunk chunk{k, offset, std::min(chunk_bytes, bytes - offset)};
        hvd_status_t s = HVD_OK;
        char *at = chunks->arrive(chunk, &s, message);
        if (at == nullptr) return s != HVD_OK ? s : HVD_ERR_INTERNAL;
        s = collective(at, chunk);
        if (s != HVD_OK) {
            *message = strprintf(
                "rank %d: %s: chunk %zu of %zu (bytes %zu to %zu of %zu) "
                "failed: %s",
                comm.global_rank(), what.c_str(), k + 1, n, offset, offset + chunk.bytes, bytes,
                status_message(s));
            return s;
        }
        chunks->done(chunk, at);
    }
    return HVD_OK;
}

}  // namespace hvd::engine
