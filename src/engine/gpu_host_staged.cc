// SPDX-License-Identifier: Apache-2.0
// The host-staged path of GpuRunner: the run's CUDA inputs are copied into pinned host memory,
// the CPU collectives run on the copies exactly as for host tensors (so every op, dtype and
// reduction works), and the outputs are copied back to the device: Adasum, which combines
// whole vectors. The other ops are pipelined in chunks instead: allreduces and broadcasts
// (gpu_staged_ops.cc), allgathers (gpu_staged_allgather.cc), reduce-scatters
// (gpu_staged_reducescatter.cc) and alltoalls (gpu_staged_alltoall.cc).
#include "common/error.h"
#include "engine/gpu_runner.h"
#include "engine/staged_allreduce.h"

namespace hvd::engine {

namespace {

// An allreduce out of place needs its own staging for the output.
bool separate_output(const Request &req) {
    return req.output.data != req.input.data;
}

// Where a request's tensors are on the device and in the staging buffer.
struct Place {
    void *device_in, *device_out;
    char *host_in, *host_out;
};

// Points the requests at their host copies for as long as it lives, then back at the device.
class OnHost {
  public:
    OnHost(const std::vector<RequestPtr> &reqs, const std::vector<Place> &places)
        : reqs_(reqs), places_(places) {
        for (size_t i = 0; i < reqs_.size(); ++i) {
            reqs_[i]->input.data = places_[i].host_in;
            reqs_[i]->output.data = places_[i].host_out;
        }
    }
    OnHost(const OnHost &) = delete;
    OnHost &operator=(const OnHost &) = delete;
    ~OnHost() {
        for (size_t i = 0; i < reqs_.size(); ++i) {
            reqs_[i]->input.data = places_[i].device_in;
            reqs_[i]->output.data = places_[i].device_out;
        }
    }

  private:
    const std::vector<RequestPtr> &reqs_;
    const std::vector<Place> &places_;
};

}  // namespace

hvd_status_t GpuRunner::run_host_staged(collectives::Comm &comm, const Response *resps,
                                        const std::vector<RequestPtr> &reqs,
                                        collectives::ScratchBuffer *fusion, gpu::DeviceState &dev,
                                        const ActivityTrace &trace, std::string *message) {
    if (runs_staged_allreduce(resps[0]))
        return run_staged_allreduce(comm, resps[0], reqs, dev, trace, message);
    if (resps[0].type == OpType::kBroadcast)
        return run_staged_broadcast(comm, resps[0], reqs, dev, trace, message);
    if (resps[0].type == OpType::kAllgather)
        return run_staged_allgather(comm, resps, reqs, dev, trace, message);
    if (resps[0].type == OpType::kReducescatter)
        return run_staged_reducescatter(comm, resps[0], reqs, dev, trace, message);
    if (resps[0].type == OpType::kAlltoall)
        return run_staged_alltoall(comm, resps[0], reqs, dev, trace, message);
    if (resps[0].type != OpType::kAllreduce)  // Adasum's; staged whole
        throw Error(HVD_ERR_INTERNAL,
                    strprintf("rank %d: %s '%s' has no host path", rank_,
                              op_type_name(resps[0].type), resps[0].name.c_str()));
    size_t total = 0;
    for (const RequestPtr &r : reqs)
        total += r->input.bytes() + (separate_output(*r) ? r->output.bytes() : 0);
    dev.staging.reserve_pinned(lib_, dev.device, total);
    std::vector<Place> places;
    places.reserve(reqs.size());
    char *cursor = dev.staging.data();
    trace.begin("MEMCPY_DEVICE_TO_HOST");
    for (const RequestPtr &r : reqs) {
        Place p{r->input.data, r->output.data, cursor, cursor};
        cursor += r->input.bytes();
        if (separate_output(*r)) {
            p.host_out = cursor;
            cursor += r->output.bytes();
        }
        lib_->call("cudaMemcpyAsync (to host)", lib_->api->copy_async, dev.device, p.host_in,
                   p.device_in, r->input.bytes(), dev.stream);
        places.push_back(p);
    }
    lib_->call("cudaEventRecord", lib_->api->event_record, dev.device, dev.done, dev.stream);
    std::string what = strprintf("copying '%s' to the host", reqs.front()->meta.name.c_str());
    hvd_status_t s =
        gpu::wait_event(*lib_, dev.device, dev.done, nullptr, comm.deadline, comm.abort_status,
                        rank_, what, message, comm.transport_to_drive());
    trace.end();
    if (s != HVD_OK) return s;
    {
        OnHost on_host(reqs, places);
        s = reqs.size() == 1 ? execute_response(comm, resps[0], *reqs.front(), message)
                             : execute_fused(comm, resps, reqs, fusion, trace, message);
    }
    if (s != HVD_OK) return s;
    trace.begin("MEMCPY_HOST_TO_DEVICE");
    for (size_t i = 0; i < reqs.size(); ++i)
        lib_->call("cudaMemcpyAsync (to the device)", lib_->api->copy_async, dev.device,
                   places[i].device_out, places[i].host_out, reqs[i]->output.bytes(), dev.stream);
    // The staging buffer is reused by the next op: wait for the copies even with a stream.
    s = finish_on_device(comm, resps[0], reqs, dev, nullptr, true, message);
    trace.end();
    return s;
}

}  // namespace hvd::engine
