// SPDX-License-Identifier: Apache-2.0
// The allgather of CUDA tensors through pinned host memory in chunks: the rows of every group
// of ranks (a rank alone on the host path; a host's ranks among the hosts' first ranks in the
// hierarchical allgather) lie one group after another in one run (within a group tensor by
// tensor, rank by rank), which DeviceStagedChunks cuts into the staged pipeline's chunks. Each
// chunk holds pieces of a run of groups, in group order: this rank's group's pieces are copied
// to the host, the host collectives' allgatherv fills in the others' (each member's block is
// its group's piece of the chunk), and those are copied into place in the outputs. Copies to
// the host, the exchange and copies back overlap, and pinned memory holds at most four chunks.
#include <algorithm>
#include <utility>
#include <vector>

#include "collectives/collectives.h"
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/staged_chunks.h"

namespace hvd::engine {

AllgatherPlacement::AllgatherPlacement(const Response *resps, const std::vector<RequestPtr> &reqs,
                                       std::vector<char *> outs_)
    : outs(std::move(outs_)), offsets(reqs.size()) {
    for (size_t t = 0; t < reqs.size(); ++t) {
        const size_t row_bytes = row_bytes_of(reqs[t]->input);
        offsets[t].push_back(0);
        for (int64_t rows : resps[t].first_dims)
            offsets[t].push_back(offsets[t].back() + static_cast<size_t>(rows) * row_bytes);
    }
}

namespace {

// The groups' rows one after another: every piece's place in that run and in the outputs.
struct GroupRuns {
    GroupRuns(const AllgatherPlacement &place, const std::vector<std::vector<int32_t>> &groups,
              size_t mine, const std::vector<RequestPtr> *own) {
        for (size_t g = 0; g < groups.size(); ++g) {
            starts.push_back(bytes);
            for (size_t t = 0; t < place.outs.size(); ++t)
                for (int32_t r : groups[g]) {
                    const size_t ur = static_cast<size_t>(r), n = place.bytes(t, ur, ur + 1);
                    char *at = place.at(t, ur);
                    // This group's rows go to the host: from the input where they are not in
                    // place yet, copied into place on the way back.
                    const void *from = g == mine && own != nullptr ? (*own)[t]->input.data : at;
                    if (n > 0)
                        append_span(&spans,
                                    {bytes, n, from, at, g == mine, g != mine || from != at});
                    bytes += n;
                }
        }
        starts.push_back(bytes);
    }
    // Each group's bytes within [offset, offset + n) of the run.
    std::vector<size_t> within(size_t offset, size_t n) const {
        std::vector<size_t> counts(starts.size() - 1);
        for (size_t g = 0; g < counts.size(); ++g) {
            const size_t lo = std::max(offset, starts[g]);
            const size_t hi = std::min(offset + n, starts[g + 1]);
            counts[g] = hi > lo ? hi - lo : 0;
        }
        return counts;
    }

    std::vector<DeviceSpan> spans;
    std::vector<size_t> starts;  // each group's first byte in the run, then the run's end
    size_t bytes = 0;
};

}  // namespace

hvd_status_t GpuRunner::gather_blocks(collectives::Comm &comm, const AllgatherPlacement &place,
                                      const std::vector<std::vector<int32_t>> &groups,
                                      const std::vector<RequestPtr> *own, gpu::DeviceState &dev,
                                      const ActivityTrace &trace, void *nc, const std::string &what,
                                      std::string *message) {
    const size_t mine = static_cast<size_t>(comm.my_index);
    if (groups.size() != static_cast<size_t>(comm.size()) ||
        (own != nullptr && groups[mine] != std::vector<int32_t>{comm.my_index}))
        throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: %s: %zu groups of ranks for %d members",
                                                rank_, what.c_str(), groups.size(), comm.size()));
    for (const std::vector<size_t> &offsets : place.offsets)
        for (const std::vector<int32_t> &group : groups)
            for (int32_t r : group)
                if (r < 0 || static_cast<size_t>(r) + 1 >= offsets.size())
                    throw Error(HVD_ERR_INTERNAL,
                                strprintf("rank %d: %s: no row count for member %d", rank_,
                                          what.c_str(), r));
    GroupRuns runs(place, groups, mine, own);
    const size_t chunk_bytes = staged_chunk_bytes(runs.bytes);
    ActivitySpan span(trace, "STAGED_" + transfer_activity(comm, OpType::kAllgather));
    DeviceStagedChunks chunks(lib_, dev, comm, rank_, runs.spans, runs.bytes, chunk_bytes, what);
    chunks.poll_nccl(nc);
    hvd_status_t s = run_staged_chunks(
        comm, runs.bytes, chunk_bytes, what, &chunks,
        [&](char *at, const StagedChunk &chunk) {
            const std::vector<size_t> counts = runs.within(chunk.offset, chunk.bytes);
            size_t before = 0;  // the chunk's bytes of the groups before this rank's
            for (size_t g = 0; g < mine; ++g)
                before += counts[g];
            return collectives::allgatherv(comm, at + before, at, counts);
        },
        message);
    if (s == HVD_OK) chunks.join();
    return s;
}

hvd_status_t GpuRunner::run_staged_allgather(collectives::Comm &comm, const Response *resps,
                                             const std::vector<RequestPtr> &reqs,
                                             gpu::DeviceState &dev, const ActivityTrace &trace,
                                             std::string *message) {
    const AllgatherPlacement place(resps, reqs, allgather_outputs(resps, reqs, dev));
    std::vector<std::vector<int32_t>> alone(static_cast<size_t>(comm.size()));
    for (size_t i = 0; i < alone.size(); ++i)
        alone[i] = {static_cast<int32_t>(i)};
    const std::string what =
        strprintf("allgather '%s'%s on CUDA device %d through host memory",
                  reqs.front()->meta.name.c_str(), reqs.size() > 1 ? " (fused)" : "", dev.device);
    hvd_status_t s = gather_blocks(comm, place, alone, &reqs, dev, trace, nullptr, what, message);
    // The staging slots are reused by the next op: wait even with a stream.
    if (s == HVD_OK) s = finish_on_device(comm, resps[0], reqs, dev, nullptr, true, message);
    return s;
}

}  // namespace hvd::engine
