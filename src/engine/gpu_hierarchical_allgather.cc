// SPDX-License-Identifier: Apache-2.0
// The hierarchical allgather of CUDA tensors (HVD_HIERARCHICAL_ALLGATHER=1), for a run of one
// or more allgathers (ragged rows allowed), in the outputs themselves:
//
//   1. within the host, each local rank's rows are broadcast by NCCL into their place in every
//      local rank's output (one group); a host of one rank copies its rows into place;
//   2. the host's first rank (its leader) exchanges the hosts' rows with the other leaders: all
//      hosts' rows, host after host, are one run cut into chunks (staged_chunks.h) that pass
//      through four slots of pinned memory; each chunk's own rows are copied to the host, the
//      chunk is gathered among the leaders (the host collectives' allgatherv), and the other
//      hosts' rows in it are copied into place, the copies overlapping the exchange;
//   3. within the host, the leader broadcasts the other hosts' rows by NCCL (one group; ranks
//      of other hosts that follow each other in rank order as one broadcast).
//
// Only the leaders cross hosts, and each host's rows reach each other host once.
#include <vector>

#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/nccl_group.h"
#include "engine/op_math.h"

namespace hvd::engine {

hvd_status_t GpuRunner::run_hierarchical_allgather(collectives::Comm &comm, const Response *resps,
                                                   const std::vector<RequestPtr> &reqs,
                                                   gpu::DeviceState &dev,
                                                   const ActivityTrace &trace, void **nccl_comm,
                                                   std::string *message) {
    const collectives::Hierarchy &h = *comm.hierarchy;
    const AllgatherPlacement place(resps, reqs, allgather_outputs(resps, reqs, dev));
    const size_t tensors = reqs.size();
    const size_t me = static_cast<size_t>(comm.my_index);
    collectives::Comm local = h.local_comm(comm);
    void *nc = host_comm(local, resps[0], dev, nccl_comm);
    {
        ActivitySpan span(trace, nc != nullptr ? "NCCL_BROADCAST" : "MEMCPY_DEVICE_TO_DEVICE");
        if (nc != nullptr) {
            NcclGroup group(lib_);
            for (size_t t = 0; t < tensors; ++t)
                for (size_t li = 0; li < h.local_members.size(); ++li) {
                    const size_t r = static_cast<size_t>(h.local_members[li]);
                    const size_t bytes = place.bytes(t, r, r + 1);
                    if (bytes == 0) continue;
                    lib_->call("ncclBroadcast", lib_->api->nccl_broadcast,
                               r == me ? reqs[t]->input.data : nullptr, place.at(t, r), bytes,
                               static_cast<int32_t>(li), nc, dev.stream);
                }
            group.end();
            settle(nc);
        } else {  // a host of one: its rows into place (nothing where they are in place)
            for (size_t t = 0; t < tensors; ++t)
                copy_scaled(dev, place.at(t, me), reqs[t]->input.data, place.bytes(t, me, me + 1),
                            reqs[t]->input.dtype, 1.0, 1.0);
        }
    }
    const bool leader = h.local_index == 0;
    if (leader) {
        std::vector<int32_t> leaders;
        for (const std::vector<int32_t> &ranks : h.hosts)
            leaders.push_back(ranks.front());
        collectives::Comm cross =
            collectives::Hierarchy::sub_comm(comm, leaders, h.host_index, nullptr);
        const std::string what =
            strprintf("allgather '%s'%s across hosts from CUDA device %d",
                      reqs.front()->meta.name.c_str(), tensors > 1 ? " (fused)" : "", dev.device);
        hvd_status_t s =
            gather_blocks(cross, place, h.hosts, nullptr, dev, trace, nc, what, message);
        if (s != HVD_OK) return s;
    }
    if (nc != nullptr) {
        ActivitySpan span(trace, "NCCL_BROADCAST");
        std::vector<bool> here(static_cast<size_t>(comm.size()), false);
        for (int32_t r : h.local_members)
            here[static_cast<size_t>(r)] = true;
        NcclGroup group(lib_);
        for (size_t t = 0; t < tensors; ++t)
            for (size_t first = 0; first < here.size();) {
                if (here[first]) {
                    ++first;
                    continue;
                }
                size_t last = first;
                while (last < here.size() && !here[last])
                    ++last;
                const size_t bytes = place.bytes(t, first, last);
                if (bytes > 0)
                    lib_->call("ncclBroadcast", lib_->api->nccl_broadcast, place.at(t, first),
                               place.at(t, first), bytes, 0, nc, dev.stream);
                first = last;
            }
        group.end();
        settle(nc);
    }
    // A leader's staging buffer is reused by the next op: it waits even with a stream.
    return finish_on_device(comm, resps[0], reqs, dev, nc, leader || some_without_stream(reqs),
                            message);
}

}  // namespace hvd::engine
