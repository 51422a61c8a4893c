// SPDX-License-Identifier: Apache-2.0
#include "engine/staged_allreduce.h"

#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "common/error.h"
#include "engine/executor.h"

namespace hvd::engine {

namespace {

// The joined rank's chunks: zeros in one chunk of scratch memory, refilled for each chunk
// (the allreduce leaves the others' sum there).
class ZeroChunks : public StagedChunks {
  public:
    ZeroChunks(collectives::ScratchBuffer *scratch, size_t chunk_bytes)
        : at_(static_cast<char *>(scratch->get(chunk_bytes))) {}
    char *arrive(const StagedChunk &chunk, hvd_status_t *, std::string *) override {
        std::memset(at_, 0, chunk.bytes);
        return at_;
    }
    void done(const StagedChunk &, char *) override {}

  private:
    char *at_;
};

}  // namespace

bool runs_staged_allreduce(const negotiation::Response &resp) {
    return resp.device_type == HVD_DEVICE_CUDA && resp.type == negotiation::OpType::kAllreduce &&
           resp.reduce_op != HVD_OP_ADASUM;
}

hvd_status_t allreduce_staged(collectives::Comm &comm, size_t bytes, size_t chunk_bytes,
                              int32_t dtype, int32_t op, double prescale, double postscale,
                              const std::string &what, StagedChunks *chunks, std::string *message) {
    const size_t esz = dtype_size(dtype);
    if (esz == 0 || bytes % esz != 0 || chunk_bytes % esz != 0 || op == HVD_OP_ADASUM ||
        op == HVD_OP_AVERAGE) {
        *message = strprintf(
            "rank %d: %s: %zu bytes in chunks of %zu cannot run as a staged "
            "allreduce of dtype %d with op %d",
            comm.global_rank(), what.c_str(), bytes, chunk_bytes, dtype, op);
        return HVD_ERR_INTERNAL;
    }
    return run_staged_chunks(
        comm, bytes, chunk_bytes, what, chunks,
        [&](char *at, const StagedChunk &chunk) {
            return allreduce_scaled(comm, at, at, chunk.bytes / esz, dtype, op, prescale,
                                    postscale);
        },
        message);
}

hvd_status_t allreduce_staged_zeros(collectives::Comm &comm, size_t bytes, int32_t dtype,
                                    int32_t op, double prescale, double postscale,
                                    collectives::ScratchBuffer *scratch, std::string *message) {
    const size_t chunk_bytes = staged_chunk_bytes(bytes);
    ZeroChunks zeros(scratch, std::max<size_t>(chunk_bytes, 1));
    return allreduce_staged(comm, bytes, chunk_bytes, dtype, op, prescale, postscale,
                            "a joined rank's part in an allreduce of CUDA tensors", &zeros,
                            message);
}

}  // namespace hvd::engine
