// SPDX-License-Identifier: Apache-2.0
// The hierarchical allgather of CUDA tensors (HVD_HIERARCHICAL_ALLGATHER=1), for a run of one
// or more allgathers (ragged rows allowed), in the outputs themselves:
//
//   1. within the host, each local rank's rows are broadcast by NCCL into their place in every
//      local rank's output (one group); a host of one rank copies its rows into place;
//   2. the host's first rank (its leader) copies the host's rows into pinned memory, gathers
//      every host's rows there with the other leaders (the host collectives' allgatherv), and
//      copies the other hosts' rows into place;
//   3. within the host, the leader broadcasts the other hosts' rows by NCCL (one group; ranks
//      of other hosts that follow each other in rank order as one broadcast).
//
// Only the leaders cross hosts, and each host's rows cross once per leader.
#include <utility>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/nccl_group.h"
#include "engine/op_math.h"

namespace hvd::engine {

namespace {

// Where each rank's rows of each tensor of the run are in its output.
struct Placement {
    Placement(const Response *resps, const std::vector<RequestPtr> &reqs, std::vector<char *> outs_)
        : outs(std::move(outs_)), offsets(reqs.size()) {
        for (size_t t = 0; t < reqs.size(); ++t) {
            const size_t row_bytes = row_bytes_of(reqs[t]->input);
            offsets[t].push_back(0);
            for (int64_t rows : resps[t].first_dims)
                offsets[t].push_back(offsets[t].back() + static_cast<size_t>(rows) * row_bytes);
        }
    }
    // Rank r's rows of tensor t, and their bytes; ranks [first, last) together.
    char *at(size_t t, size_t r) const { return outs[t] + offsets[t][r]; }
    size_t bytes(size_t t, size_t first, size_t last) const {
        return offsets[t][last] - offsets[t][first];
    }
    // The bytes of `ranks`' rows of every tensor.
    size_t bytes_of(const std::vector<int32_t> &ranks) const {
        size_t sum = 0;
        for (size_t t = 0; t < outs.size(); ++t)
            for (int32_t r : ranks)
                sum += bytes(t, static_cast<size_t>(r), static_cast<size_t>(r) + 1);
        return sum;
    }

    std::vector<char *> outs;
    std::vector<std::vector<size_t>> offsets;  // per tensor: every rank's, then the total
};

}  // namespace

hvd_status_t GpuRunner::run_hierarchical_allgather(collectives::Comm &comm, const Response *resps,
                                                   const std::vector<RequestPtr> &reqs,
                                                   gpu::DeviceState &dev,
                                                   const ActivityTrace &trace, void **nccl_comm,
                                                   std::string *message) {
    if (hvd_status_t s = collectives::check_hierarchy(comm, "allgather"); s != HVD_OK) {
        *message = strprintf(
            "rank %d: the hierarchical allgather of CUDA tensors found no "
            "hierarchy of the job's ranks",
            rank_);
        return s;
    }
    const collectives::Hierarchy &h = *comm.hierarchy;
    const Placement place(resps, reqs, allgather_outputs(resps, reqs, dev));
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
        } else {
            for (size_t t = 0; t < tensors; ++t)
                if (place.at(t, me) != reqs[t]->input.data)
                    lib_->call("cudaMemcpyAsync", lib_->api->copy_async, dev.device,
                               place.at(t, me), reqs[t]->input.data, place.bytes(t, me, me + 1),
                               dev.stream);
        }
    }
    const bool leader = h.local_index == 0;
    if (leader) {
        ActivitySpan span(trace, "STAGED_ALLGATHER_ACROSS_HOSTS");
        std::vector<size_t> host_bytes;
        std::vector<int32_t> leaders;
        for (const std::vector<int32_t> &ranks : h.hosts) {
            host_bytes.push_back(place.bytes_of(ranks));
            leaders.push_back(ranks.front());
        }
        size_t total = 0, mine = 0;
        for (size_t hh = 0; hh < host_bytes.size(); ++hh) {
            if (static_cast<int32_t>(hh) == h.host_index) mine = total;
            total += host_bytes[hh];
        }
        dev.staging.reserve_pinned(lib_, dev.device, total);
        char *staged = dev.staging.data();
        // Each host's rows lie in the staging buffer tensor by tensor, rank by rank.
        auto each_piece = [&](size_t hh, size_t start, const auto &copy) {
            size_t pos = start;
            for (size_t t = 0; t < tensors; ++t)
                for (int32_t r : h.hosts[hh]) {
                    const size_t ur = static_cast<size_t>(r), bytes = place.bytes(t, ur, ur + 1);
                    if (bytes > 0) copy(place.at(t, ur), staged + pos, bytes);
                    pos += bytes;
                }
        };
        const size_t host = static_cast<size_t>(h.host_index);
        each_piece(host, mine, [&](char *device, char *pinned, size_t bytes) {
            lib_->call("cudaMemcpyAsync (to host)", lib_->api->copy_async, dev.device, pinned,
                       device, bytes, dev.stream);
        });
        lib_->call("cudaEventRecord", lib_->api->event_record, dev.device, dev.done, dev.stream);
        const std::string what =
            strprintf("allgather '%s'%s across hosts from CUDA device %d",
                      reqs.front()->meta.name.c_str(), tensors > 1 ? " (fused)" : "", dev.device);
        hvd_status_t s =
            gpu::wait_event(*lib_, dev.device, dev.done, nc, comm.deadline, comm.abort_status,
                            rank_, what, message, comm.transport_to_drive());
        if (s != HVD_OK) return s;
        collectives::Comm leaders_comm =
            collectives::Hierarchy::sub_comm(comm, leaders, h.host_index, nullptr);
        s = collectives::allgatherv(leaders_comm, staged + mine, staged, host_bytes);
        if (s != HVD_OK) {
            *message = strprintf("rank %d: %s: %s", rank_, what.c_str(), status_message(s));
            return s;
        }
        size_t start = 0;
        for (size_t hh = 0; hh < h.hosts.size(); start += host_bytes[hh], ++hh) {
            if (hh == host) continue;
            each_piece(hh, start, [&](char *device, char *pinned, size_t bytes) {
                lib_->call("cudaMemcpyAsync (to the device)", lib_->api->copy_async, dev.device,
                           device, pinned, bytes, dev.stream);
            });
        }
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
    bool must_wait = leader;
    for (const RequestPtr &r : reqs)
        must_wait = must_wait || !r->has_stream;
    return finish_on_device(comm, resps[0], reqs, dev, nc, must_wait, message);
}

}  // namespace hvd::engine
