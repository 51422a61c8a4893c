// SPDX-License-Identifier: Apache-2.0
// The allreduce of CUDA tensors that runs through host memory (the host-staged path), in
// chunks (staged_chunks.h), and a joined rank's part in it. Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/comm.h"
#include "engine/staged_chunks.h"
#include "hvd/hvd.h"
#include "negotiation/op_meta.h"

namespace hvd::engine {

// Whether a response that runs through host memory runs as a staged allreduce: an allreduce of
// CUDA tensors, but Adasum's (which reduces each tensor whole). The members staging their
// tensors and a rank that joined decide the same from the same response.
bool runs_staged_allreduce(const negotiation::Response &resp);

// Allreduces the run's `bytes` bytes (whole elements of dtype), chunk by chunk of
// `chunk_bytes` (a multiple of the element size; all members pass the same), each in place
// where `chunks` puts it: prescaled on the host first, reduced with op (Sum, Min, Max or
// Product: Average is a Sum with its 1 / size in `postscale`), then scaled by postscale. Every
// member's chunk k goes through one CPU allreduce of its own, with comm.seq: members call
// them in the same order, so their messages stay matched. Blocking; fails as
// run_staged_chunks.
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
