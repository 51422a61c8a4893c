// SPDX-License-Identifier: Apache-2.0
// The alltoall of CUDA tensors through pinned host memory in chunks. With C chunks, the rows
// this rank sends to member j and those it receives from j are each cut into C pieces of about
// bytes / C (staged_piece_bytes; the last ones shorter or empty); sender and receiver cut a
// block alike, from the agreed matrix of rows. Chunk k holds piece k of every block this rank
// sends, member by member, then room for piece k of every block it receives: each chunk is an
// alltoallv in which every pair of members exchanges at once. The sends go to the host, the
// receptions come back into place in the output, and the rank's own rows are copied on the
// device, outside the chunks. C follows the member that moves the most bytes, so every member
// runs the same number of chunks; each rank's chunks lie `stride` bytes apart, the sum of its
// full pieces (at least one byte: a rank with nothing to move still takes part in each chunk).
#include <algorithm>
#include <vector>

#include "collectives/collectives.h"
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/staged_chunks.h"

namespace hvd::engine {

namespace {

// This rank's blocks to and from each member, their pieces, and its spans of the run.
class ExchangeChunks {
  public:
    // rows: the n x n matrix of rows, [sender][receiver]; in, out: this rank's input and its
    // output (every member's rows to it, member by member).
    ExchangeChunks(const std::vector<int64_t> &rows, size_t n, size_t me, size_t row_bytes,
                   const char *in, char *out)
        : sends_(n), receives_(n) {
        size_t most = 0;  // the bytes the busiest member moves to and from the others
        for (size_t i = 0; i < n; ++i) {
            size_t moves = 0;
            for (size_t j = 0; j < n; ++j)
                if (j != i)
                    moves += static_cast<size_t>(rows[i * n + j] + rows[j * n + i]) * row_bytes;
            most = std::max(most, moves);
        }
        chunks_ = staged_chunk_count(most, staged_chunk_bytes(most));
        size_t send_off = 0, recv_off = 0;
        for (size_t j = 0; j < n; ++j) {
            sends_[j] = {in + send_off, static_cast<size_t>(rows[me * n + j]) * row_bytes};
            receives_[j] = {out + recv_off, static_cast<size_t>(rows[j * n + me]) * row_bytes};
            send_off += sends_[j].bytes;
            recv_off += receives_[j].bytes;
        }
        own_from_ = sends_[me].device;
        own_to_ = const_cast<char *>(receives_[me].device);
        own_bytes_ = sends_[me].bytes;
        sends_[me].bytes = receives_[me].bytes = 0;  // copied on the device
        for (Block &b : sends_)
            send_room_ += b.piece(chunks_);
        size_t recv_room = 0;
        for (Block &b : receives_)
            recv_room += b.piece(chunks_);
        stride_ = std::max<size_t>(1, send_room_ + recv_room);
        for (size_t k = 0; k < chunks_; ++k) {
            size_t at = k * stride_;
            for (const Block &b : sends_) {
                const size_t lo = b.begin(k), hi = b.end(k);
                if (hi > lo)
                    append_span(&spans_, {at, hi - lo, b.device + lo, nullptr, true, false});
                at += hi - lo;
            }
            at = k * stride_ + send_room_;
            for (const Block &b : receives_) {
                const size_t lo = b.begin(k), hi = b.end(k);
                char *dst = const_cast<char *>(b.device) + lo;
                if (hi > lo) append_span(&spans_, {at, hi - lo, dst, dst, false, true});
                at += hi - lo;
            }
        }
    }

    size_t chunks() const { return chunks_; }
    size_t stride() const { return stride_; }
    size_t bytes() const { return chunks_ * stride_; }
    size_t send_room() const { return send_room_; }
    const std::vector<DeviceSpan> &spans() const { return spans_; }
    // This rank's rows to itself: from the input, and where they go in the output.
    const char *own_from() const { return own_from_; }
    char *own_to() const { return own_to_; }
    size_t own_bytes() const { return own_bytes_; }
    // The bytes of chunk k sent to, and received from, each member.
    void counts(size_t k, std::vector<size_t> *send, std::vector<size_t> *recv) const {
        for (size_t j = 0; j < sends_.size(); ++j) {
            (*send)[j] = sends_[j].end(k) - sends_[j].begin(k);
            (*recv)[j] = receives_[j].end(k) - receives_[j].begin(k);
        }
    }

  private:
    struct Block {
        const char *device;  // its first byte on the device
        size_t bytes;
        size_t full = 0;  // the bytes of its pieces but the last ones
        size_t piece(size_t chunks) {
            full = staged_piece_bytes(bytes, chunks);
            return full;
        }
        size_t begin(size_t k) const { return std::min(k * full, bytes); }
        size_t end(size_t k) const { return std::min((k + 1) * full, bytes); }
    };

    std::vector<Block> sends_, receives_;
    const char *own_from_ = nullptr;
    char *own_to_ = nullptr;
    size_t own_bytes_ = 0;
    size_t chunks_ = 0, stride_ = 0, send_room_ = 0;
    std::vector<DeviceSpan> spans_;
};

}  // namespace

hvd_status_t GpuRunner::run_staged_alltoall(collectives::Comm &comm, const Response &resp,
                                            const std::vector<RequestPtr> &reqs,
                                            gpu::DeviceState &dev, const ActivityTrace &trace,
                                            std::string *message) {
    const size_t n = static_cast<size_t>(comm.size()), me = static_cast<size_t>(comm.my_index);
    if (reqs.size() != 1 || resp.first_dims.size() != n * n)
        throw Error(HVD_ERR_INTERNAL,
                    strprintf("rank %d: alltoall '%s': %zu requests, %zu row counts for %zu "
                              "members",
                              rank_, resp.name.c_str(), reqs.size(), resp.first_dims.size(), n));
    Request &req = *reqs.front();
    char *out = alltoall_output(resp, req, comm.size(), comm.my_index, dev);
    const ExchangeChunks layout(resp.first_dims, n, me, row_bytes_of(req.input),
                                static_cast<const char *>(req.input.data), out);
    if (layout.own_bytes() > 0)
        lib_->call("cudaMemcpyAsync (own rows)", lib_->api->copy_async, dev.device, layout.own_to(),
                   layout.own_from(), layout.own_bytes(), dev.stream);
    std::vector<size_t> send(n), recv(n);
    return run_staged_chunkwise(
        comm, resp, reqs, dev, trace, {layout.spans(), layout.bytes(), layout.stride()},
        [&](char *at, const StagedChunk &chunk) {
            layout.counts(chunk.index, &send, &recv);
            return collectives::alltoallv(comm, at, send, at + layout.send_room(), recv);
        },
        message);
}

}  // namespace hvd::engine
