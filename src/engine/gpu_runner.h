// SPDX-License-Identifier: Apache-2.0
// Runs the agreed responses whose tensors are in CUDA memory: on NCCL (resp.nccl; allreduces
// and allgathers of a job spanning hosts hierarchically where asked), or staged through pinned host
// memory into the CPU collectives. Either way it first makes the library's stream of the device
// wait for each tensor's ready event; afterwards each request with a caller's stream has that
// stream wait for the op's end (the request then completes at once, the host never blocks on
// the device, and the op's work is watched until it ends), and the others complete once their
// output is valid on the device. Engine thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/comm.h"
#include "engine/device_staged_chunks.h"
#include "engine/executor.h"
#include "engine/request.h"
#include "gpu/device_state.h"
#include "gpu/device_watch.h"
#include "gpu/gpu_library.h"
#include "gpu/nccl_comms.h"

namespace hvd::engine {

// Where each member's rows of each tensor of an allgather run are in the outputs.
struct AllgatherPlacement {
    AllgatherPlacement(const Response *resps, const std::vector<RequestPtr> &reqs,
                       std::vector<char *> outs_);
    // Member r's rows of tensor t; the bytes of members [first, last)'s rows of tensor t.
    char *at(size_t t, size_t r) const { return outs[t] + offsets[t][r]; }
    size_t bytes(size_t t, size_t first, size_t last) const {
        return offsets[t][last] - offsets[t][first];
    }
    std::vector<char *> outs;
    std::vector<std::vector<size_t>> offsets;  // per tensor: every member's, then the total
};

// A staged run's bytes on the device (DeviceStagedChunks' spans) and its chunks' size (0: one
// chunk).
struct StagedLayout {
    std::vector<DeviceSpan> spans;
    size_t bytes = 0, chunk_bytes = 0;
};

class GpuRunner {
  public:
    // lib: the process's GPU module (loaded: a CUDA tensor passed the enqueue checks).
    GpuRunner(const gpu::GpuLibrary *lib, int32_t rank)
        : lib_(lib), rank_(rank), comms_(lib, rank), devices_(lib), watch_(lib, rank) {}
    // Work still queued after the bounded drain (an NCCL kernel waiting on a peer that is
    // gone) ends with its communicators, before the device memory it uses is freed: freeing
    // it would wait for that work forever.
    ~GpuRunner() {
        if (!devices_.drain()) abort_communicators();
    }

    // Runs one response or a fused run of responses (resps[0 .. reqs.size())); reqs: their
    // requests, each with CUDA tensors on one device. fusion: the host fusion buffer the
    // host-staged path lends to the CPU collectives. Returns the status the requests complete with.
    hvd_status_t run(collectives::Comm &comm, const Response *resps,
                     const std::vector<RequestPtr> &reqs, collectives::ScratchBuffer *fusion,
                     const ActivityTrace &trace, std::string *message);

    // The context aborted: every NCCL communicator is aborted, which ends NCCL work still
    // running on the device (an op whose request completed on a caller's stream, a peer that
    // died mid-collective), so no stream waits on it forever.
    void abort_communicators() {
        watch_.forget_all();
        comms_.abort_all();
    }

    // The process set was destroyed: its NCCL communicators go.
    void forget_set(uint16_t set_id) {
        devices_.drain();  // its last ops finish before its communicators go
        watch_.forget_comms();
        comms_.forget_set(set_id);
    }

    // Polls the work of ops that completed on callers' streams (gpu::DeviceWatch::check):
    // HVD_OK, or the first that failed or outlived its deadline (the context must abort).
    hvd_status_t check_watched(std::string *message) { return watch_.check(message); }
    // Whether such work is still running (the engine polls again soon).
    bool watching() const { return watch_.busy(); }

  private:
    hvd_status_t run_host_staged(collectives::Comm &comm, const Response *resps,
                                 const std::vector<RequestPtr> &reqs,
                                 collectives::ScratchBuffer *fusion, gpu::DeviceState &dev,
                                 const ActivityTrace &trace, std::string *message);
    // The host path's collectives pipelined in chunks (gpu_staged_ops.cc): run_staged makes the
    // DeviceStagedChunks of `layout` with `directions` and runs `run` (the collective over its
    // chunks) with them, then finish_on_device, waiting even with a stream (the staging slots
    // are reused by the next op). A run of no bytes stages nothing.
    using StagedRun =
        std::function<hvd_status_t(size_t bytes, size_t chunk_bytes, const std::string &what,
                                   StagedChunks *chunks, std::string *message)>;
    hvd_status_t run_staged(collectives::Comm &comm, const Response &resp,
                            const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                            const ActivityTrace &trace, StagedLayout layout,
                            StagingDirections directions, const StagedRun &run,
                            std::string *message);
    // run_staged with `collective` run on each chunk in turn (run_staged_chunks); the spans
    // say which way each piece travels.
    hvd_status_t run_staged_chunkwise(collectives::Comm &comm, const Response &resp,
                                      const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                      const ActivityTrace &trace, StagedLayout layout,
                                      const ChunkCollective &collective, std::string *message);
    // The allreduces and broadcasts: the run's tensors one after another, in chunks of
    // staged_chunk_bytes.
    hvd_status_t run_staged_allreduce(collectives::Comm &comm, const Response &resp,
                                      const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                      const ActivityTrace &trace, std::string *message);
    hvd_status_t run_staged_broadcast(collectives::Comm &comm, const Response &resp,
                                      const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                      const ActivityTrace &trace, std::string *message);
    // The host path's reduce-scatters in chunks (gpu_staged_reducescatter.cc): every chunk
    // holds a piece of every member's block; this rank's piece of each result is copied into
    // its library-owned outputs. Then finish_on_device.
    hvd_status_t run_staged_reducescatter(collectives::Comm &comm, const Response &resp,
                                          const std::vector<RequestPtr> &reqs,
                                          gpu::DeviceState &dev, const ActivityTrace &trace,
                                          std::string *message);
    // The host path's alltoalls in chunks (gpu_staged_alltoall.cc): every chunk holds a piece
    // of every block this rank sends and receives; its own rows are copied on the device. Into
    // a library-owned output; then finish_on_device.
    hvd_status_t run_staged_alltoall(collectives::Comm &comm, const Response &resp,
                                     const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                     const ActivityTrace &trace, std::string *message);
    // Whether an allreduce or allgather on NCCL runs hierarchically: comm has the job's
    // hierarchy (the op's type runs hierarchically) and HVD_HIERARCHICAL_ALLREDUCE=1 or
    // HVD_HIERARCHICAL_ALLGATHER=1 asked for it on CUDA tensors.
    static bool runs_hierarchical(const collectives::Comm &comm, const Response &resp);
    // Runs a response that runs_hierarchical: checks that comm's hierarchy describes its
    // members, then the hierarchical allreduce or allgather.
    hvd_status_t run_hierarchical(collectives::Comm &comm, const Response *resps,
                                  const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                  const ActivityTrace &trace, void **nccl_comm,
                                  std::string *message);
    // The hierarchical allreduce (gpu_hierarchical_allreduce.cc): NCCL within the host, the
    // host path across hosts, NCCL again within the host; then finish_on_device. *nccl_comm
    // gets the host's communicator (where the host runs two ranks or more).
    hvd_status_t run_hierarchical_allreduce(collectives::Comm &comm, const Response &resp,
                                            const std::vector<RequestPtr> &reqs,
                                            gpu::DeviceState &dev, const ActivityTrace &trace,
                                            void **nccl_comm, std::string *message);
    // The hierarchical allgather (gpu_hierarchical_allgather.cc): NCCL within the host, the
    // host leaders across hosts through pinned memory, NCCL again within the host; then
    // finish_on_device. *nccl_comm as run_hierarchical_allreduce's.
    hvd_status_t run_hierarchical_allgather(collectives::Comm &comm, const Response *resps,
                                            const std::vector<RequestPtr> &reqs,
                                            gpu::DeviceState &dev, const ActivityTrace &trace,
                                            void **nccl_comm, std::string *message);
    // The allgather of `groups`' rows (groups of comm's members, in member order, comm's
    // member i standing for groups[i]) through pinned memory in chunks (gpu_staged_allgather.cc),
    // into place in the outputs. own: the run's requests, where this rank's group is itself
    // and its rows are still in its inputs (else null: the group's rows are in place). nc: the
    // NCCL communicator whose work comes first on the stream (null: none). Blocks until the
    // exchange is done; the last copies into place are then ordered on dev.stream.
    hvd_status_t gather_blocks(collectives::Comm &comm, const AllgatherPlacement &place,
                               const std::vector<std::vector<int32_t>> &groups,
                               const std::vector<RequestPtr> *own, gpu::DeviceState &dev,
                               const ActivityTrace &trace, void *nc, const std::string &what,
                               std::string *message);
    // The host path's allgathers: gather_blocks with each member alone, then finish_on_device.
    hvd_status_t run_staged_allgather(collectives::Comm &comm, const Response *resps,
                                      const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                      const ActivityTrace &trace, std::string *message);
    // The run's allgather outputs on the device: each caller's, or one the library owns (its
    // shape set) for every member's rows.
    std::vector<char *> allgather_outputs(const Response *resps,
                                          const std::vector<RequestPtr> &reqs,
                                          gpu::DeviceState &dev);
    // Each reduce-scatter's library-owned output on the device, for this member's rows
    // (Horovod's split); sets their shapes.
    std::vector<char *> reducescatter_outputs(const std::vector<RequestPtr> &reqs, int32_t n,
                                              int32_t me, gpu::DeviceState &dev);
    // The alltoall's library-owned output on the device, for every member's rows to this one
    // (resp.first_dims: the n x n matrix of rows, [sender][receiver]); sets its shape and the
    // received splits.
    char *alltoall_output(const Response &resp, Request &req, int32_t n, int32_t me,
                          gpu::DeviceState &dev);
    // The host's NCCL communicator of the job's hierarchy (null where the host runs one rank),
    // made on first use; settle() then waits on it.
    void *host_comm(collectives::Comm &local, const Response &resp, gpu::DeviceState &dev,
                    void **nccl_comm);
    // Queues the run's NCCL work on dev.stream; *nccl_comm gets the communicator used.
    void queue_nccl(collectives::Comm &comm, const Response *resps,
                    const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev, void **nccl_comm);
    void queue_allreduce(const std::vector<RequestPtr> &reqs, int32_t set_size, void *nc,
                         gpu::DeviceState &dev);
    void queue_allgather(const Response *resps, const std::vector<RequestPtr> &reqs, int32_t me,
                         void *nc, gpu::DeviceState &dev);
    void queue_broadcast(Request &req, void *nc, gpu::DeviceState &dev);
    void queue_alltoall(const Response &resp, Request &req, int32_t n, int32_t me, void *nc,
                        gpu::DeviceState &dev);
    void queue_reducescatter(const std::vector<RequestPtr> &reqs, int32_t n, int32_t me, void *nc,
                             gpu::DeviceState &dev);
    // dev.fusion := the run's allreduce inputs one after another, each scaled by pre (batched
    // copy kernels); returns dev.fusion's data.
    char *fuse_inputs(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev, double pre);
    // Copies each request's part of `fused` into its output, scaled by post.
    void unfuse_outputs(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                        const char *fused, double post);
    // Queues (dst, src, bytes) copies of dtype elements scaled by factor, HVD_GPU_COPY_BATCH
    // per kernel, on dev.stream.
    void copy_batched(gpu::DeviceState &dev, const std::vector<hvd_gpu_copy_t> &copies,
                      int32_t dtype, double factor);
    // The host path of a set of one member (gpu_local_ops.cc): each op's result is its own
    // tensor, copied or scaled on the device's stream.
    void queue_local(const Response *resps, const std::vector<RequestPtr> &reqs,
                     gpu::DeviceState &dev);
    // dst = src * pre, then * post (each 1.0: a plain copy; nothing where dst is src), for
    // `bytes` bytes of `dtype` on dev.stream.
    void copy_scaled(gpu::DeviceState &dev, void *dst, const void *src, size_t bytes, int32_t dtype,
                     double pre, double post);
    // dst[i] = src[i] * factor for count elements of dtype (in place where dst is src), as a
    // kernel on dev.stream.
    void scale(gpu::DeviceState &dev, void *dst, const void *src, size_t count, int32_t dtype,
               double factor);
    // A library-owned output of `bytes` bytes on the device, for the work on its stream.
    char *owned_device_output(Request &req, gpu::DeviceState &dev, size_t bytes);
    // Waits until the communicator's last NCCL call (or group) has queued its work, before
    // anything that depends on it is queued (NcclComms::await_idle, with the run's Comm).
    void settle(void *nccl_comm);
    // Makes dev.stream wait for every ready event of the run's tensors.
    void wait_ready_events(const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev);
    // Whether some request of the run has no caller's stream (the run then completes only once
    // its output is valid on the device).
    static bool some_without_stream(const std::vector<RequestPtr> &reqs);
    // After the run's work is queued: records an event, hands it to the callers' streams, and
    // waits for it on the host, or, where every request has a stream, hands it to the watch.
    hvd_status_t finish_on_device(const collectives::Comm &comm, const Response &resp,
                                  const std::vector<RequestPtr> &reqs, gpu::DeviceState &dev,
                                  void *nccl_comm, bool must_wait, std::string *message);
    // After a failed run: ends the communicator it used (whose state NCCL no longer knows)
    // and waits, bounded, for the device work already queued (copies into the callers'
    // outputs) before the requests complete with the failure.
    void settle_failed_run(const collectives::Comm &comm, gpu::DeviceState *dev, void *nccl_comm,
                           const std::string &what);
    void abort_comm(void *nccl_comm) {
        watch_.forget_comm(nccl_comm);
        comms_.abort(nccl_comm);
    }

    const gpu::GpuLibrary *lib_;
    int32_t rank_;
    // Destroyed in reverse order: the streams are drained before the communicators go.
    gpu::NcclComms comms_;
    gpu::DeviceStates devices_;
    gpu::DeviceWatch watch_;
    // The Comm of the communicator the run uses (settle()); null outside run().
    const collectives::Comm *settling_ = nullptr;
};

}  // namespace hvd::engine
