// SPDX-License-Identifier: Apache-2.0
// The host-staged path's allreduce, pipelined (engine/staged_allreduce.h): the run's CUDA
// tensors are one buffer of bytes, cut into chunks that go through kStagingSlots slots of
// pinned host memory. Copies to the host run on the device's stream, copies back on its back
// stream, so both directions and the CPU collectives work at once:
//
//   stream       D2H 0 | D2H 1 | D2H 2 | D2H 3 | (waits: 0 departed) D2H 4 ...
//   host               | reduce 0 | reduce 1 | reduce 2 ...
//   back stream                   | H2D 0    | H2D 1    | H2D 2 ...
//
// Chunk k reuses slot k % kStagingSlots once chunk k - kStagingSlots has left it: the stream
// waits for that chunk's departure event before copying into the slot. Chunks are queued to
// the host kStagingSlots ahead of the one being reduced. At the end (or on failure) the stream
// waits for the back stream, so everything later on the stream (the op's end event, the next
// op) comes after the copies back.
#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/staged_allreduce.h"

namespace hvd::engine {

namespace {

// One tensor of the run: where its bytes are in the run and on the device.
struct Span {
    size_t offset, bytes;
    const void *device_in;
    void *device_out;
};

class DeviceChunks : public StagedChunks {
  public:
    DeviceChunks(const gpu::GpuLibrary *lib, gpu::DeviceState &dev, const collectives::Comm &comm,
                 int32_t rank, std::vector<Span> spans, size_t bytes, size_t chunk_bytes,
                 std::string what)
        : lib_(lib),
          dev_(dev),
          comm_(comm),
          rank_(rank),
          spans_(std::move(spans)),
          bytes_(bytes),
          chunk_bytes_(chunk_bytes),
          chunks_(bytes == 0 ? 0 : (bytes + chunk_bytes - 1) / chunk_bytes),
          what_(std::move(what)) {}
    DeviceChunks(const DeviceChunks &) = delete;
    DeviceChunks &operator=(const DeviceChunks &) = delete;
    // Whatever happened, the device's stream goes on only after the copies back.
    ~DeviceChunks() {
        hvd_gpu_err_t err;
        err.text[0] = '\0';
        if (lib_->api->event_record(dev_.device, dev_.back_done, dev_.back_stream, &err) != 0 ||
            lib_->api->stream_wait_event(dev_.device, dev_.stream, dev_.back_done, &err) != 0)
            HVD_LOG(kWarning, rank_,
                    "rank %d: %s: ordering the copies back before the device's later work "
                    "failed (%s)",
                    rank_, what_.c_str(), err.text);
    }

    char *arrive(const StagedChunk &chunk, hvd_status_t *status, std::string *message) override {
        const size_t ahead = std::min(chunk.index + gpu::kStagingSlots, chunks_);
        for (; queued_ < ahead; ++queued_)
            queue_to_host(queued_);
        *status =
            gpu::wait_event(*lib_, dev_.device, dev_.arrived[chunk.index % gpu::kStagingSlots],
                            nullptr, comm_.deadline, comm_.abort_status, rank_,
                            strprintf("%s: copying chunk %zu of %zu to the host", what_.c_str(),
                                      chunk.index + 1, chunks_),
                            message, comm_.transport_to_drive());
        return *status == HVD_OK ? slot(chunk.index) : nullptr;
    }

    void done(const StagedChunk &chunk, char *at) override {
        copy_spans(chunk.offset, chunk.bytes, at, false, dev_.back_stream);
        lib_->call("cudaEventRecord (chunk copied back)", lib_->api->event_record, dev_.device,
                   dev_.departed[chunk.index % gpu::kStagingSlots], dev_.back_stream);
    }

  private:
    char *slot(size_t index) const {
        return dev_.staging.data() + (index % gpu::kStagingSlots) * chunk_bytes_;
    }

    void queue_to_host(size_t index) {
        if (index >= gpu::kStagingSlots)  // the slot's last chunk must have left it
            lib_->call("cudaStreamWaitEvent (slot free)", lib_->api->stream_wait_event, dev_.device,
                       dev_.stream, dev_.departed[index % gpu::kStagingSlots]);
        const size_t offset = index * chunk_bytes_;
        copy_spans(offset, std::min(chunk_bytes_, bytes_ - offset), slot(index), true, dev_.stream);
        lib_->call("cudaEventRecord (chunk on the host)", lib_->api->event_record, dev_.device,
                   dev_.arrived[index % gpu::kStagingSlots], dev_.stream);
    }

    // Copies the run's bytes [offset, offset + bytes) between the tensors and host memory at
    // `host`: from the inputs (to_host) or into the outputs, on `stream`.
    void copy_spans(size_t offset, size_t bytes, char *host, bool to_host, void *stream) const {
        const size_t end = offset + bytes;
        auto it = std::upper_bound(spans_.begin(), spans_.end(), offset,
                                   [](size_t o, const Span &s) { return o < s.offset; });
        if (it != spans_.begin()) --it;
        for (; it != spans_.end() && it->offset < end; ++it) {
            const size_t from = std::max(offset, it->offset);
            const size_t to = std::min(end, it->offset + it->bytes);
            if (from >= to) continue;
            const size_t in_tensor = from - it->offset;
            char *h = host + (from - offset);
            if (to_host)
                lib_->call("cudaMemcpyAsync (to the host)", lib_->api->copy_async, dev_.device, h,
                           static_cast<const char *>(it->device_in) + in_tensor, to - from, stream);
            else
                lib_->call("cudaMemcpyAsync (to the device)", lib_->api->copy_async, dev_.device,
                           static_cast<char *>(it->device_out) + in_tensor, h, to - from, stream);
        }
    }

    const gpu::GpuLibrary *lib_;
    gpu::DeviceState &dev_;
    const collectives::Comm &comm_;
    int32_t rank_;
    std::vector<Span> spans_;
    size_t bytes_, chunk_bytes_, chunks_;
    size_t queued_ = 0;  // chunks whose copy to the host is queued
    std::string what_;
};

}  // namespace

hvd_status_t GpuRunner::run_staged_allreduce(collectives::Comm &comm, const Response &resp,
                                             const std::vector<RequestPtr> &reqs,
                                             gpu::DeviceState &dev, const ActivityTrace &trace,
                                             std::string *message) {
    std::vector<Span> spans;
    spans.reserve(reqs.size());
    size_t bytes = 0;
    for (const RequestPtr &r : reqs) {
        spans.push_back({bytes, r->input.bytes(), r->input.data, r->output.data});
        bytes += r->input.bytes();
    }
    const size_t chunk_bytes = staged_chunk_bytes(bytes);
    gpu::make_staging_pipeline(*lib_, dev);
    dev.staging.reserve(lib_, gpu::DeviceBuffer::Kind::kPinnedHost, dev.device,
                        std::max<size_t>(1, std::min(bytes, gpu::kStagingSlots * chunk_bytes)));
    const Request &first = *reqs.front();
    std::string what =
        strprintf("allreduce '%s'%s on CUDA device %d through host memory", first.meta.name.c_str(),
                  reqs.size() > 1 ? " (fused)" : "", dev.device);
    trace.begin("STAGED_" + transfer_activity(comm, OpType::kAllreduce));
    hvd_status_t s;
    {
        DeviceChunks chunks(lib_, dev, comm, rank_, std::move(spans), bytes, chunk_bytes, what);
        s = allreduce_staged(comm, bytes, chunk_bytes, first.input.dtype, reduction_of(first),
                             first.meta.prescale, postscale_of(first, comm.size()), &chunks,
                             message);
    }
    if (s == HVD_OK)  // the staging slots are reused by the next op: wait even with a stream
        s = finish_on_device(comm, resp, reqs, dev, nullptr, true, message);
    trace.end();
    return s;
}

}  // namespace hvd::engine
