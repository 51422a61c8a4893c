// SPDX-License-Identifier: Apache-2.0
// The allreduce of CUDA tensors that runs through host memory (the host-staged path), cut into
// chunks so that the copies of one chunk overlap the reduction of another: while the CPU
// collectives reduce chunk k, chunk k + 1 is on its way to the host and chunk k - 1 on its way
// back. The CPU collectives run once per chunk, so every member of the set (and a rank that
// joined, taking part with zeros) must cut the same chunks: they depend on the run's bytes
// alone. Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/comm.h"
#include "hvd/hvd.h"
#include "negotiation/op_meta.h"

namespace hvd::engine {

// Whether a response that runs through host memory runs as a staged allreduce: an allreduce of
// CUDA tensors, but Adasum's (which reduces each tensor whole). The members staging their
// tensors and a rank that joined decide the same from the same response.
bool runs_staged_allreduce(const negotiation::Response &resp);

// The chunk a staged allreduce of `bytes` bytes is cut into (the last chunk may be shorter):
// `bytes` itself (one chunk) up to 4 MiB, then a quarter of it rounded up to whole MiB, at
// most 8 MiB. Whole MiB hold whole elements of every dtype.
size_t staged_chunk_bytes(size_t bytes);

// The chunks of a staged allreduce, numbered 0, 1, ... in the order of the run's bytes.
struct StagedChunk {
    size_t index;
    size_t offset;  // in the run's bytes
    size_t bytes;
};

// What the caller does around each chunk; allreduce_staged calls arrive(k) then done(k) for
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

// Allreduces the run's `bytes` bytes (whole elements of dtype), chunk by chunk of
// `chunk_bytes` (a multiple of the element size; all members pass the same), each in place
// where `chunks` puts it: prescaled on the host first, reduced with op (Sum, Min, Max or
// Product: Average is a Sum with its 1 / size in `postscale`), then scaled by postscale. Every
// member's chunk k goes through one CPU allreduce of its own, with comm.seq: members call
// them in the same order, so their messages stay matched. Blocking; returns HVD_OK or the
// first failure, with *message naming this rank, `what` (the op) and the chunk; lets what
// `chunks` throws through.
hvd_status_t allreduce_staged(collectives::Comm &comm, size_t bytes, size_t chunk_bytes,
                              int32_t dtype, int32_t op, double prescale, double postscale,
                              const std::string &what, StagedChunks *chunks, std::string *message);

// A joined rank's part in an allreduce of CUDA tensors staged by the other members: the same
// chunks (staged_chunk_bytes) and the same arguments as theirs, this rank's input zeros (in
// `scratch`, one chunk of it), its results dropped.
hvd_status_t allreduce_staged_zeros(collectives::Comm &comm, size_t bytes, int32_t dtype,
                                    int32_t op, double prescale, double postscale,
                                    collectives::ScratchBuffer *scratch, std::string *message);

}  // namespace hvd::engine
