// SPDX-License-Identifier: Apache-2.0
#include "engine/staged_broadcast.h"

#include "collectives/collectives.h"

namespace hvd::engine {

hvd_status_t broadcast_staged(collectives::Comm &comm, size_t bytes, size_t chunk_bytes,
                              int32_t root_index, const std::string &what, StagedChunks *chunks,
                              std::string *message) {
    return run_staged_chunks(
        comm, bytes, chunk_bytes, what, chunks,
        [&](char *at, const StagedChunk &chunk) {
            return collectives::broadcast(comm, at, chunk.bytes, root_index);
        },
        message);
}

}  // namespace hvd::engine
