// SPDX-License-Identifier: Apache-2.0
// The host-staged path's allreduces and broadcasts, pipelined in chunks: the CPU collective
// takes one chunk at a time (staged_allreduce.h, staged_broadcast.h) while DeviceStagedChunks
// moves the chunks between the device and pinned host memory (device_staged_chunks.h).

#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/staged_allreduce.h"
#include "engine/staged_broadcast.h"

namespace hvd::engine {

hvd_status_t GpuRunner::run_staged(collectives::Comm &comm, const Response &resp,
                                   const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                   const ActivityTrace &trace, StagingDirections directions,
                                   const StagedRun &run, std::string *message) {
    std::vector<DeviceSpan> spans;
    spans.reserve(reqs.size());
    size_t bytes = 0;
    for (const RequestPtr &r : reqs) {
        spans.push_back({bytes, r->input.bytes(), r->input.data, r->output.data});
        bytes += r->input.bytes();
    }
    const size_t chunk_bytes = staged_chunk_bytes(bytes);
    const std::string what =
        strprintf("%s '%s'%s on CUDA device %d through host memory", op_type_name(resp.type),
                  reqs.front()->meta.name.c_str(), reqs.size() > 1 ? " (fused)" : "", dev.device);
    ActivitySpan span(trace, "STAGED_" + transfer_activity(comm, resp.type));
    hvd_status_t s;
    {
        DeviceStagedChunks chunks(lib_, dev, comm, rank_, std::move(spans), bytes, chunk_bytes,
                                  what, directions);
        s = run(bytes, chunk_bytes, what, &chunks, message);
        if (s == HVD_OK) chunks.join();
    }
    if (s == HVD_OK)  // the staging slots are reused by the next op: wait even with a stream
        s = finish_on_device(comm, resp, reqs, dev, nullptr, true, message);
    return s;
}

hvd_status_t GpuRunner::run_staged_allreduce(collectives::Comm &comm, const Response &resp,
                                             const std::vector<RequestPtr> &reqs,
                                             gpu::DeviceState &dev, const ActivityTrace &trace,
                                             std::string *message) {
    const Request &first = *reqs.front();
    return run_staged(
        comm, resp, reqs, dev, trace, {},
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
        comm, resp, reqs, dev, trace, directions,
        [&](size_t bytes, size_t chunk_bytes, const std::string &what, StagedChunks *chunks,
            std::string *msg) {
            return broadcast_staged(comm, bytes, chunk_bytes, root, what, chunks, msg);
        },
        message);
}

}  // namespace hvd::engine
