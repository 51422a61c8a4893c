// SPDX-License-Identifier: Apache-2.0
#include "engine/gpu_runner.h"

#include <new>
#include <utility>

#include "common/error.h"
#include "common/log.h"

namespace hvd::engine {

namespace {

// How long a failed run waits for the device work it already queued.
constexpr int64_t kFailedRunDrainMs = 5000;

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

bool GpuRunner::some_without_stream(const std::vector<RequestPtr> &reqs) {
    for (const RequestPtr &r : reqs)
        if (!r->has_stream) return true;
    return false;
}

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
    gpu::DeviceState *dev = nullptr;
    hvd_status_t s = HVD_OK;
    try {
        dev = &devices_.get(device);
        trace.begin("WAIT_FOR_DATA");
        wait_ready_events(reqs, *dev);
        trace.end();
        const bool nccl = nccl_runs(*lib_, resps[0]);
        if (!nccl && comm.size() > 1) {
            s = run_host_staged(comm, resps, reqs, fusion, *dev, trace, message);
        } else if (nccl && runs_hierarchical(comm, resps[0])) {
            s = run_hierarchical(comm, resps, reqs, *dev, trace, &nccl_comm, message);
        } else {
            trace.begin(nccl ? "NCCL_" + upper_op_name(resps[0].type) : "MEMCPY_DEVICE_TO_DEVICE");
            if (nccl)
                queue_nccl(comm, resps, reqs, *dev, &nccl_comm);
            else  // a set of one: its data stays on the device
                queue_local(resps, reqs, *dev);
            s = finish_on_device(comm, resps[0], reqs, *dev, nccl_comm, some_without_stream(reqs),
                                 message);
            trace.end();
        }
    } catch (const Error &e) {
        *message = e.what();
        s = e.status();
    } catch (const std::bad_alloc &) {
        *message = strprintf("rank %d: out of memory running '%s' on CUDA device %d", rank_,
                             first.meta.name.c_str(), device);
        s = HVD_ERR_NO_MEMORY;
    }
    settling_ = nullptr;  // the Comm it pointed at may be gone with the run
    if (s != HVD_OK) settle_failed_run(comm, dev, nccl_comm, first.meta.name);
    return s;
}

void GpuRunner::settle_failed_run(const collectives::Comm &comm, gpu::DeviceState *dev,
                                  void *nccl_comm, const std::string &what) {
    const bool aborted =
        comm.abort_status != nullptr && comm.abort_status->load(std::memory_order_acquire) != 0;
    if (aborted)
        abort_communicators();  // the context is going down: no NCCL work is worth waiting for
    else if (nccl_comm != nullptr)
        abort_comm(nccl_comm);
    if (dev == nullptr) return;
    // Not bounded by the context's abort flag, which the failure is about to raise; driving
    // the transport, which may hold bytes that NCCL work of other communicators waits for.
    auto drained = [&] {
        return gpu::wait_stream_done(*lib_, *dev, Deadline::after_ms(kFailedRunDrainMs), rank_,
                                     what, comm.transport_to_drive());
    };
    if (drained()) return;
    if (!aborted) {
        // Earlier work of another communicator may wait on a peer: every communicator ends.
        abort_communicators();
        if (drained()) return;
    }
    HVD_LOG(kWarning, rank_,
            "CUDA device %d's queued work did not end after '%s' failed: its outputs may "
            "still be written",
            dev->device, what.c_str());
}

void GpuRunner::wait_ready_events(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev) {
    for (const RequestPtr &r : reqs) {
        if (r->input.ready_event != nullptr)
            lib_->call("cudaStreamWaitEvent (ready event)", lib_->api->stream_wait_event,
                       dev.device, dev.stream, r->input.ready_event);
        if (r->output.ready_event != nullptr && r->output.ready_event != r->input.ready_event)
            lib_->call("cudaStreamWaitEvent (ready event)", lib_->api->stream_wait_event,
                       dev.device, dev.stream, r->output.ready_event);
        if (r->stream_mark.event() != nullptr) {
            lib_->call("cudaStreamWaitEvent (the caller's stream)", lib_->api->stream_wait_event,
                       dev.device, dev.stream, r->stream_mark.event());
            r->stream_mark.release();
        }
    }
}

hvd_status_t GpuRunner::finish_on_device(const collectives::Comm &comm, const Response &resp,
                                         const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                         void *nccl_comm, bool must_wait, std::string *message) {
    std::string what = strprintf("%s '%s' on CUDA device %d", op_type_name(resp.type),
                                 resp.name.c_str(), dev.device);
    void *end = dev.done;
    if (must_wait) {
        lib_->call("cudaEventRecord", lib_->api->event_record, dev.device, dev.done, dev.stream);
    } else {
        gpu::WatchedOp op{dev.device, dev.stream, nccl_comm, comm.deadline, what};
        hvd_status_t s = watch_.watch(std::move(op), comm.abort_status, comm.transport_to_drive(),
                                      &end, message);
        if (s != HVD_OK) return s;
    }
    for (const RequestPtr &r : reqs)
        if (r->has_stream)
            lib_->call("cudaStreamWaitEvent (caller's stream)", lib_->api->stream_wait_event,
                       dev.device, r->stream, end);
    if (!must_wait) return HVD_OK;
    return gpu::wait_event(*lib_, dev.device, dev.done, nccl_comm, comm.deadline, comm.abort_status,
                           rank_, what, message, comm.transport_to_drive());
}

}  // namespace hvd::engine
