// SPDX-License-Identifier: Apache-2.0
#include "engine/gpu_runner.h"

#include <new>

#include "common/error.h"

namespace hvd::engine {

namespace {

bool is_cuda(const TensorRef &t) {
    return t.device_type == HVD_DEVICE_CUDA;
}

// Whether NCCL can run the response: data movement always, a reduction where NCCL has the
// dtype and the op (not int16, uint16, bool, nor Adasum). Every member decides the same from
// the same response.
bool nccl_runs(const gpu::GpuLibrary &lib, const Response &resp) {
    if (!resp.nccl) return false;
    if (resp.type != OpType::kAllreduce && resp.type != OpType::kReducescatter) return true;
    int32_t op = resp.reduce_op == HVD_OP_AVERAGE ? HVD_OP_SUM : resp.reduce_op;
    return lib.api->nccl_supports(resp.dtype, op) != 0;
}

}  // namespace

hvd_status_t GpuRunner::run(collectives::Comm &comm, const Response *resps,
                            const std::vector<RequestPtr> &reqs, collectives::ScratchBuffer *fusion,
                            const ActivityTrace &trace, std::string *message) {
    const Request &first = *reqs.front();
    const int32_t device = first.input.device_id;
    for (const RequestPtr &r : reqs)
        if (!is_cuda(r->input) || r->input.device_id != device)
            throw Error(HVD_ERR_INTERNAL,
                        strprintf("rank %d: a run of ops on CUDA device %d from '%s' has '%s' "
                                  "on another device",
                                  rank_, device, first.meta.name.c_str(), r->meta.name.c_str()));
    void *nccl_comm = nullptr;
    try {
        gpu::DeviceState &dev = devices_.get(device);
        trace.begin("WAIT_FOR_DATA");
        wait_ready_events(reqs, dev);
        trace.end();
        if (!nccl_runs(*lib_, resps[0]))
            return run_host_staged(comm, resps, reqs, fusion, dev, trace, message);
        trace.begin("NCCL_" + upper_op_name(resps[0].type));
        queue_nccl(comm, resps, reqs, dev, &nccl_comm);
        bool must_wait = false;
        for (const RequestPtr &r : reqs)
            must_wait = must_wait || !r->has_stream;
        hvd_status_t s = finish_on_device(comm, resps[0], reqs, dev, nccl_comm, must_wait, message);
        trace.end();
        if (s != HVD_OK && nccl_comm != nullptr) comms_.abort(nccl_comm);
        return s;
    } catch (const Error &e) {
        if (nccl_comm != nullptr) comms_.abort(nccl_comm);
        *message = e.what();
        return e.status();
    } catch (const std::bad_alloc &) {
        if (nccl_comm != nullptr) comms_.abort(nccl_comm);
        *message = strprintf("rank %d: out of memory running '%s' on CUDA device %d", rank_,
                             first.meta.name.c_str(), device);
        return HVD_ERR_NO_MEMORY;
    }
}

void GpuRunner::wait_ready_events(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev) {
    for (const RequestPtr &r : reqs) {
        if (r->input.ready_event != nullptr)
            lib_->call("cudaStreamWaitEvent (ready event)", lib_->api->stream_wait_event,
                       dev.device, dev.stream, r->input.ready_event);
        if (r->output.ready_event != nullptr && r->output.ready_event != r->input.ready_event)
            lib_->call("cudaStreamWaitEvent (ready event)", lib_->api->stream_wait_event,
                       dev.device, dev.stream, r->output.ready_event);
    }
}

hvd_status_t GpuRunner::finish_on_device(const collectives::Comm &comm, const Response &resp,
                                         const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                         void *nccl_comm, bool must_wait, std::string *message) {
    lib_->call("cudaEventRecord", lib_->api->event_record, dev.device, dev.done, dev.stream);
    for (const RequestPtr &r : reqs)
        if (r->has_stream)
            lib_->call("cudaStreamWaitEvent (caller's stream)", lib_->api->stream_wait_event,
                       dev.device, r->stream, dev.done);
    if (!must_wait) return HVD_OK;
    return gpu::wait_event(*lib_, dev.device, dev.done, nccl_comm, comm.deadline, comm.abort_status,
                           rank_,
                           strprintf("%s '%s' on CUDA device %d", op_type_name(resp.type),
                                     resp.name.c_str(), dev.device),
                           message, comm.transport_to_drive());
}

}  // namespace hvd::engine
