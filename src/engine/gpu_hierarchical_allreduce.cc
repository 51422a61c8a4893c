// SPDX-License-Identifier: Apache-2.0
// The hierarchical allreduce of CUDA tensors (HVD_HIERARCHICAL_ALLREDUCE=1, as Horovod's
// HOROVOD_HIERARCHICAL_ALLREDUCE): NCCL within each host, the host path across hosts, NCCL
// again within each host. With the job's hierarchy (collectives/hierarchy.h), whose shares cut
// the run's elements into as many parts as the smallest host has ranks:
//
//   1. within the host, each share is reduced onto the rank that holds it (one in-place
//      ncclReduceScatter where every local rank holds a share of equal size, else one
//      ncclReduce per share, in one group);
//   2. each holder allreduces its share across hosts with the holders of the same share,
//      through pinned host memory in chunks (DeviceStagedChunks, allreduce_staged) on the
//      host collectives of its cross group;
//   3. within the host, each share is broadcast from its holder (one in-place ncclAllGather,
//      or one ncclBroadcast per share in one group).
//
// The run works in place in its output (a run of one) or in the device fusion buffer, where
// the inputs are copied prescaled and from where the outputs are copied postscaled.
#include <vector>

#include "collectives/hierarchy.h"
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/nccl_group.h"
#include "engine/op_math.h"
#include "engine/staged_allreduce.h"

namespace hvd::engine {

namespace {

// One step within the host: `whole` (every local rank holds a share, all of one size) as the
// one in-place collective, else one call per share that has elements, to or from its holder.
struct HostStep {
    const gpu::GpuLibrary *lib;
    const collectives::Hierarchy &h;
    const std::vector<size_t> &share_at, &share_count;  // in elements (collectives::cut_shares)
    char *buf;
    int32_t dtype, op;
    void *nc;
    gpu::DeviceState &dev;

    char *at(size_t share) const { return buf + share_at[share] * dtype_size(dtype); }

    // call(share's data, its element count, its holder's local index) for each share that
    // has elements, in one NCCL group.
    template <typename Call>
    void each_share(const Call &call) const {
        NcclGroup group(lib);
        for (size_t li = 0; li < h.local_share.size(); ++li) {
            const int32_t s = h.local_share[li];
            if (s < 0 || share_count[static_cast<size_t>(s)] == 0) continue;
            call(at(static_cast<size_t>(s)), share_count[static_cast<size_t>(s)],
                 static_cast<int32_t>(li));
        }
        group.end();
    }

    void reduce(bool whole) const {
        const int32_t me = h.local_index;
        if (whole) {
            lib->call("ncclReduceScatter", lib->api->nccl_reducescatter, buf,
                      at(static_cast<size_t>(me)), share_count[0], dtype, op, nc, dev.stream);
            return;
        }
        each_share([&](char *p, size_t count, int32_t holder) {
            lib->call("ncclReduce", lib->api->nccl_reduce, p, holder == me ? p : nullptr, count,
                      dtype, op, holder, nc, dev.stream);
        });
    }

    void gather(bool whole) const {
        const size_t esz = dtype_size(dtype);
        if (whole) {
            lib->call("ncclAllGather", lib->api->nccl_allgather,
                      at(static_cast<size_t>(h.local_index)), buf, share_count[0] * esz, nc,
                      dev.stream);
            return;
        }
        each_share([&](char *p, size_t count, int32_t holder) {
            lib->call("ncclBroadcast", lib->api->nccl_broadcast, p, p, count * esz, holder, nc,
                      dev.stream);
        });
    }
};

}  // namespace

bool GpuRunner::runs_hierarchical(const collectives::Comm &comm, const Response &resp) {
    if (comm.hierarchy == nullptr) return false;
    if (resp.type == OpType::kAllreduce) return comm.hierarchy->cuda_allreduce;
    return resp.type == OpType::kAllgather && comm.hierarchy->cuda_allgather;
}

hvd_status_t GpuRunner::run_hierarchical(collectives::Comm &comm, const Response *resps,
                                         const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                         const ActivityTrace &trace, void **nccl_comm,
                                         std::string *message) {
    const char *op = op_type_name(resps[0].type);
    if (hvd_status_t s = collectives::check_hierarchy(comm, op); s != HVD_OK) {
        *message = strprintf(
            "rank %d: the hierarchical %s of CUDA tensors found no hierarchy of "
            "the job's ranks",
            rank_, op);
        return s;
    }
    if (resps[0].type == OpType::kAllreduce)
        return run_hierarchical_allreduce(comm, resps[0], reqs, dev, trace, nccl_comm, message);
    return run_hierarchical_allgather(comm, resps, reqs, dev, trace, nccl_comm, message);
}

void *GpuRunner::host_comm(collectives::Comm &local, const Response &resp, gpu::DeviceState &dev,
                           void **nccl_comm) {
    if (local.size() < 2) return nullptr;
    void *nc = comms_.get(local, dev.device, resp.devices_key, gpu::NcclScope::kHost);
    *nccl_comm = nc;
    settling_ = &local;
    return nc;
}

hvd_status_t GpuRunner::run_hierarchical_allreduce(collectives::Comm &comm, const Response &resp,
                                                   const std::vector<RequestPtr> &reqs,
                                                   gpu::DeviceState &dev,
                                                   const ActivityTrace &trace, void **nccl_comm,
                                                   std::string *message) {
    const collectives::Hierarchy &h = *comm.hierarchy;
    const Request &first = *reqs.front();
    const int32_t dtype = first.input.dtype;
    const double pre = first.meta.prescale, post = postscale_of(first, comm.size());
    size_t count = 0;
    for (const RequestPtr &r : reqs)
        count += r->input.elements();
    std::vector<size_t> share_at, share_count;
    collectives::cut_shares(count, h.min_local_size(), &share_at, &share_count);
    const size_t locals = h.local_members.size();
    collectives::Comm local = h.local_comm(comm);
    void *nc = host_comm(local, resp, dev, nccl_comm);
    char *buf;
    if (reqs.size() == 1) {
        buf = static_cast<char *>(first.output.data);
        copy_scaled(dev, buf, first.input.data, first.input.bytes(), dtype, pre, 1.0);
    } else {
        buf = fuse_inputs(reqs, dev, pre);
    }
    const HostStep step{lib_, h, share_at, share_count, buf, dtype, reduction_of(first), nc, dev};
    const bool whole = share_count.size() == locals && count % locals == 0;
    const bool in_host = locals > 1 && count > 0;
    if (in_host) {
        ActivitySpan span(trace, whole ? "NCCL_REDUCESCATTER" : "NCCL_REDUCE");
        step.reduce(whole);
        settle(nc);
    }
    const int32_t mine = h.my_share();
    const size_t my_bytes =
        mine >= 0 ? share_count[static_cast<size_t>(mine)] * dtype_size(dtype) : 0;
    if (my_bytes > 0) {
        collectives::Comm cross = h.cross_comm(comm);
        char *at = step.at(static_cast<size_t>(mine));
        const size_t chunk_bytes = staged_chunk_bytes(my_bytes);
        const std::string what =
            strprintf("share %d of allreduce '%s'%s across hosts from CUDA device %d", mine,
                      first.meta.name.c_str(), reqs.size() > 1 ? " (fused)" : "", dev.device);
        ActivitySpan span(trace, "STAGED_" + transfer_activity(cross, OpType::kAllreduce));
        DeviceStagedChunks chunks(lib_, dev, cross, rank_, {{0, my_bytes, at, at}}, my_bytes,
                                  chunk_bytes, what);
        chunks.poll_nccl(nc);
        hvd_status_t s = allreduce_staged(cross, my_bytes, chunk_bytes, dtype, step.op, 1.0, 1.0,
                                          what, &chunks, message);
        if (s != HVD_OK) return s;
        chunks.join();
    }
    if (in_host) {
        ActivitySpan span(trace, whole ? "NCCL_ALLGATHER" : "NCCL_BROADCAST");
        step.gather(whole);
        settle(nc);
    }
    if (reqs.size() == 1) {
        if (post != 1.0) scale(dev, buf, buf, count, dtype, post);
    } else {
        unfuse_outputs(reqs, dev, buf, post);
    }
    // A holder's staging slots are reused by the next op: it waits even with a stream.
    return finish_on_device(comm, resp, reqs, dev, nc, my_bytes > 0 || some_without_stream(reqs),
                            message);
}

}  // namespace hvd::engine
