// SPDX-License-Identifier: Apache-2.0
// The collectives of CUDA tensors that run through host memory (the host-staged path), cut into
// chunks so that the copies of one chunk overlap the CPU collective of another: while chunk k
// is reduced or broadcast, chunk k + 1 is on its way to the host and chunk k - 1 on its way
// back. The CPU collective runs once per chunk, so every member of the set (and a rank that
// joined an allreduce, taking part with zeros) must cut the same chunks: they depend on the
// run's bytes alone. The collectives: staged_allreduce.h, staged_broadcast.h; the CUDA side:
// device_staged_chunks.h. Engine thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "collectives/comm.h"
#include "hvd/hvd.h"

namespace hvd::engine {

// The chunk a staged collective of `bytes` bytes is cut into (the last chunk may be shorter):
// `bytes` itself (one chunk) up to 4 MiB, then a quarter of it rounded up to whole MiB, at
// most 8 MiB. Whole MiB hold whole elements of every dtype.
size_t staged_chunk_bytes(size_t bytes);

// How many chunks of `chunk_bytes` (0: the whole run) a run of `bytes` bytes makes; 0 for an
// empty run.
size_t staged_chunk_count(size_t bytes, size_t chunk_bytes);

// The bytes of each piece (but the last, which may be shorter or empty) when a block of
// `block_bytes` bytes is cut into `chunks` pieces, one per chunk: ceil(block_bytes / chunks)
// rounded up to whole 256 bytes (whole elements of every dtype), so that pieces laid one after
// another in a slot start aligned for the copies. 0 where chunks is 0. Ops that cut every
// member's blocks so (reduce-scatter, alltoall) get the same pieces on every member.
size_t staged_piece_bytes(size_t block_bytes, size_t chunks);

// The chunks of a run, numbered 0, 1, ... in the order of the run's bytes.
struct StagedChunk {
    size_t index;
    size_t offset;  // in the run's bytes
    size_t bytes;
};

// What the caller does around each chunk; run_staged_chunks calls arrive(k) then done(k) for
// k = 0, 1, ... in order, and nothing after a failure.
class StagedChunks {
  public:
    virtual ~StagedChunks() = default;
    // Returns where the chunk lies in host memory once it holds this rank's input (the
    // caller may then start bringing later chunks), or null with *status and *message set.
    // May throw hvd::Error instead (a failure to queue copies).
    virtual char *arrive(const StagedChunk &chunk, hvd_status_t *status, std::string *message) = 0;
    // The chunk's host memory now holds its result: the caller may send it on (copy it back to
    // the device) and reuse that memory for a later chunk once that copy is done. Throws
    // hvd::Error on failure.
    virtual void done(const StagedChunk &chunk, char *at) = 0;
};

// The CPU collective of one chunk, in place at `at`.
using ChunkCollective = std::function<hvd_status_t(char *at, const StagedChunk &chunk)>;

// Runs `collective` on each chunk of `chunk_bytes` (0: one chunk) of the run's `bytes` bytes,
// between chunks->arrive and chunks->done. Blocking; returns HVD_OK or the first failure,
// with *message naming this rank, `what` (the op) and the chunk; lets what `chunks` throws
// through.
hvd_status_t run_staged_chunks(const collectives::Comm &comm, size_t bytes, size_t chunk_bytes,
                               const std::string &what, StagedChunks *chunks,
                               const ChunkCollective &collective, std::string *message);

}  // namespace hvd::engine
