// SPDX-License-Identifier: Apache-2.0
// The host-staged path's pipeline in chunks (run_staged, which the reduce-scatter and alltoall
// use too), and its allreduces and broadcasts: the CPU collective takes one chunk at a time
// (staged_allreduce.h, staged_broadcast.h) while DeviceStagedChunks moves the chunks between
// the device and pinned host memory (device_staged_chunks.h).

#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/staged_allreduce.h"
#include "engine/staged_broadcast.h"
#include "engine/staged_chunks.h"

namespace hvd::engine {

namespace {

// The run's tensors one after another, in chunks of staged_chunk_bytes.
StagedLayout one_after_another(const std::vector<RequestPtr> &reqs) {
    StagedLayout layout;
    layout.spans.reserve(reqs.size());
    for (const RequestPtr &r : reqs) {
        layout.spans.push_back({layout.bytes, r->input.bytes(), r->input.data, r->output.data});
        layout.bytes += r->input.bytes();
    }
    layout.chunk_bytes = staged_chunk_bytes(layout.bytes);
    return layout;
}

}  // namespace

hvd_status_t GpuRunner::run_staged(collectives::Comm &comm, const Response &resp,
                                   const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                   const ActivityTrace &trace, StagedLayout layout,
                                   StagingDirections directions, const StagedRun &run,
                                   std::string *message) {
    if (layout.bytes == 0) return finish_on_device(comm, resp, reqs, dev, nullptr, true, message);
    const std::string what =
        strprintf("%s '%s'%s on CUDA device %d through host memory", op_type_name(resp.type),
                  reqs.front()->meta.name.c_str(), reqs.size() > 1 ? " (fused)" : "", dev.device);
    ActivitySpan span(trace, "STAGED_" + transfer_activity(comm, resp.type));
    hvd_status_t s;
    {
        DeviceStagedChunks chunks(lib_, dev, comm, rank_, std::move(layout.spans), layout.bytes,
                                  layout.chunk_bytes, what, directions);
        s = run(layout.bytes, layout.chunk_bytes, what, &chunks, message);
        if (s == HVD_OK) chunks.join();
    }
    if (s == HVD_OK)  // the staging slots are reused by the next op: wait even with a stream
        s = finish_on_device(comm, resp, reqs, dev, nullptr, true, message);
    return s;
}

hvd_status_t GpuRunner::run_staged_chunkwise(collectives::Comm &comm, const Response &resp,
                                             const std::vector<RequestPtr> &reqs,
                                             gpu::DeviceState &dev, const ActivityTrace &trace,
                                             StagedLayout layout, const ChunkCollective &collective,
                                             std::string *message) {
    return run_staged(
        comm, resp, reqs, dev, trace, std::move(layout), {},
        [&](size_t bytes, size_t chunk_bytes, const std::string &what, StagedChunks *chunks,
            std::string *msg) {
            return run_staged_chunks(comm, bytes, chunk_bytes, what, chunks, collective, msg);
        },
        message);
}

hvd_status_t GpuRunner::run_staged_allreduce(collectives::Comm &comm, const Response &resp,
                                             const std::vector<RequestPtr> &reqs,
                                             gpu::DeviceState &dev, const ActivityTrace &trace,
                                             std::string *message) {
    const Request &first = *reqs.front();
    return run_staged(
        comm, resp, reqs, dev, trace, one_after_another(reqs), {},
        [&](size_t bytes, size_t chunk_bytes, const std::string &what, StagedChunks *chunks,
            std::string *msg) {
            return allreduce_staged(comm, bytes, chunk_bytes, first.input.dtype,
                                    reduction_of(first), first.meta.prescale,
                                    postscale_of(first, comm.size()), what, chunks, msg);
        },
        message);
}

hvd_status_t GpuRunner::run_staged_broadcast(collectives::Comm &comm, const Response &resp,
                                             const std::vector<RequestPtr> &reqs,
                                             gpu::DeviceState &dev, const ActivityTrace &trace,
                                             std::string *message) {
    if (reqs.size() != 1)
        throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: a run of %zu broadcasts from '%s'", rank_,
                                                reqs.size(), reqs.front()->meta.name.c_str()));
    const Request &req = *reqs.front();
    const int32_t root = req.meta.root;
    const bool is_root = comm.my_index == root;
    StagingDirections directions;
    directions.to_host = is_root;
    directions.to_device = !is_root || req.output.data != req.input.data;
    return run_staged(
        comm, resp, reqs, dev, trace, one_after_another(reqs), directions,
        [&](size_t bytes, size_t chunk_bytes, const std::string &what, StagedChunks *chunks,
            std::string *msg) {
            return broadcast_staged(comm, bytes, chunk_bytes, root, what, chunks, msg);
        },
        message);
}

}  // namespace hvd::engine
