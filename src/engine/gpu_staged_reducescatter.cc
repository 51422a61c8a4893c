// SPDX-License-Identifier: Apache-2.0
// The reduce-scatter of CUDA tensors through pinned host memory in chunks. Member r's block is
// its rows of every tensor of the run, tensor by tensor (as the host path fuses them); with C
// chunks, each block is cut into C pieces of about E_r / C elements (staged_piece_bytes; the
// last ones shorter or empty). Chunk k holds piece k of every member's block, member by member, so
// each chunk is a reduce-scatter in which every member gets its piece (all of them reduce at once,
// as in the whole op), and only this rank's piece of the result is copied back, into its output.
// Chunks lie `stride` bytes apart in the run, the sum of the members' full pieces; a chunk whose
// pieces ran short leaves its tail unused. Every member cuts the same chunks: they depend on
// the shapes alone. The prescale applies to each chunk on the host before the reduction, the
// postscale (Average's division included) to this rank's piece after it.
#include <algorithm>
#include <vector>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/staged_chunks.h"
#include "reduce/reduce.h"

namespace hvd::engine {

namespace {

// Where each member's pieces are in the run, and this rank's spans of the run on the device.
class ScatterChunks {
  public:
    // outs: this rank's output of each request, with room for its rows.
    ScatterChunks(const std::vector<RequestPtr> &reqs, int32_t n, int32_t me,
                  const std::vector<char *> &outs)
        : esz_(dtype_size(reqs.front()->input.dtype)), me_(static_cast<size_t>(me)) {
        const size_t members = static_cast<size_t>(n);
        // Each member's segment of each tensor: [first element, elements).
        std::vector<std::vector<Segment>> segments(members);
        size_t total = 0;
        blocks_.assign(members, 0);
        for (size_t t = 0; t < reqs.size(); ++t) {
            const TensorRef &in = reqs[t]->input;
            const int64_t d0 = in.shape[0];
            const size_t row_elems = row_elements_of(in);
            size_t first = 0;
            for (size_t r = 0; r < members; ++r) {
                const size_t elems = static_cast<size_t>(scatter_rows(d0, n, r)) * row_elems;
                segments[r].push_back({static_cast<const char *>(in.data) + first * esz_,
                                       r == me_ ? outs[t] : nullptr, elems});
                blocks_[r] += elems;
                first += elems;
            }
            total += in.elements();
        }
        const size_t total_bytes = total * esz_;
        chunks_ = staged_chunk_count(total_bytes, staged_chunk_bytes(total_bytes));
        pieces_.assign(members, 0);
        size_t stride_elems = 0;
        for (size_t r = 0; r < members; ++r) {
            pieces_[r] = staged_piece_bytes(blocks_[r] * esz_, chunks_) / esz_;
            stride_elems += pieces_[r];
        }
        stride_ = stride_elems * esz_;
        lay_out(segments);
    }

    // The run's bytes, and the stride of its chunks: every chunk's pieces fit in it.
    size_t bytes() const { return bytes_; }
    size_t stride() const { return stride_; }
    const std::vector<DeviceSpan> &spans() const { return spans_; }
    // Elements of each member's piece in chunk k.
    std::vector<size_t> counts(size_t k) const {
        std::vector<size_t> c(blocks_.size());
        for (size_t r = 0; r < c.size(); ++r)
            c[r] = piece_end(r, k) - piece_begin(r, k);
        return c;
    }

  private:
    struct Segment {
        const char *in;  // its first element on the device
        char *out;       // where it goes on the device (this rank's segments), else null
        size_t elems;
    };

    size_t piece_begin(size_t r, size_t k) const { return std::min(k * pieces_[r], blocks_[r]); }
    size_t piece_end(size_t r, size_t k) const {
        return std::min((k + 1) * pieces_[r], blocks_[r]);
    }

    // The spans of chunk after chunk, member after member; each member's pieces follow one
    // another through its segments.
    void lay_out(const std::vector<std::vector<Segment>> &segments) {
        std::vector<size_t> seg(segments.size(), 0), done(segments.size(), 0);
        for (size_t k = 0; k < chunks_; ++k) {
            size_t at = k * stride_;
            for (size_t r = 0; r < segments.size(); ++r) {
                size_t left = piece_end(r, k) - piece_begin(r, k);
                while (left > 0) {
                    const Segment &s = segments[r][seg[r]];
                    const size_t n = std::min(left, s.elems - done[r]);
                    if (n > 0) {
                        const size_t skip = done[r] * esz_;
                        append_span(&spans_,
                                    {at, n * esz_, s.in + skip,
                                     s.out != nullptr ? s.out + skip : nullptr, true, r == me_});
                        at += n * esz_;
                        left -= n;
                        done[r] += n;
                    }
                    if (done[r] == s.elems) {
                        ++seg[r];
                        done[r] = 0;
                    }
                }
                bytes_ = std::max(bytes_, at);
            }
        }
    }

    size_t esz_, me_;
    size_t chunks_ = 0, stride_ = 0, bytes_ = 0;
    std::vector<size_t> blocks_;  // elements of each member's block
    std::vector<size_t> pieces_;  // elements of each member's full piece
    std::vector<DeviceSpan> spans_;
};

}  // namespace

hvd_status_t GpuRunner::run_staged_reducescatter(collectives::Comm &comm, const Response &resp,
                                                 const std::vector<RequestPtr> &reqs,
                                                 gpu::DeviceState &dev, const ActivityTrace &trace,
                                                 std::string *message) {
    const Request &first = *reqs.front();
    const int32_t n = comm.size(), me = comm.my_index;
    const int32_t dtype = first.input.dtype, op = reduction_of(first);
    const size_t esz = dtype_size(dtype);
    const double pre = first.meta.prescale, post = postscale_of(first, n);
    const ScatterChunks layout(reqs, n, me, reducescatter_outputs(reqs, n, me, dev));
    return run_staged_chunkwise(
        comm, resp, reqs, dev, trace, {layout.spans(), layout.bytes(), layout.stride()},
        [&](char *at, const StagedChunk &chunk) {
            const std::vector<size_t> counts = layout.counts(chunk.index);
            size_t elems = 0, before = 0;
            for (size_t r = 0; r < counts.size(); ++r) {
                if (r < static_cast<size_t>(me)) before += counts[r];
                elems += counts[r];
            }
            hvd_status_t st = pre == 1.0 ? HVD_OK : reduce::scale_into(at, at, elems, dtype, pre);
            char *mine = at + before * esz;
            if (st == HVD_OK) st = collectives::reducescatter(comm, at, mine, counts, dtype, op);
            if (st == HVD_OK && post != 1.0)
                st = reduce::scale_into(mine, mine, counts[static_cast<size_t>(me)], dtype, post);
            return st;
        },
        message);
}

}  // namespace hvd::engine
