// SPDX-License-Identifier: Apache-2.0
// The broadcast of a CUDA tensor that runs through host memory (the host-staged path), in
// chunks (staged_chunks.h): the root's chunks go to the host while earlier ones are broadcast,
// and the other members' chunks go back to the device while later ones arrive. Engine thread
// only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/comm.h"
#include "engine/staged_chunks.h"
#include "hvd/hvd.h"

namespace hvd::engine {

// Broadcasts the root's `bytes` bytes (root_index: its index in comm) to every member, chunk
// by chunk of `chunk_bytes` (all members pass the same), each in place where `chunks` puts
// it: on the root the chunk holds its input, elsewhere its contents are replaced. Every
// member's chunk k goes through one CPU broadcast of its own, with comm.seq. Blocking; fails
// as run_staged_chunks.
hvd_status_t broadcast_staged(collectives::Comm &comm, size_t bytes, size_t chunk_bytes,
                              int32_t root_index, const std::string &what, StagedChunks *chunks,
                              std::string *message);

}  // namespace hvd::engine
