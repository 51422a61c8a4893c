// SPDX-License-Identifier: Apache-2.0
#include "engine/device_staged_chunks.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "common/error.h"
#include "common/log.h"

namespace hvd::engine {

using gpu::kStagingSlots;

void append_span(std::vector<DeviceSpan> *spans, const DeviceSpan &piece) {
    if (!spans->empty()) {
        DeviceSpan &last = spans->back();
        const bool continues =
            last.offset + last.bytes == piece.offset &&
            static_cast<const char *>(last.device_in) + last.bytes == piece.device_in &&
            last.to_host == piece.to_host && last.to_device == piece.to_device &&
            (!piece.to_device ||
             static_cast<char *>(last.device_out) + last.bytes == piece.device_out);
        if (continues) {
            last.bytes += piece.bytes;
            return;
        }
    }
    spans->push_back(piece);
}

DeviceStagedChunks::DeviceStagedChunks(const gpu::GpuLibrary *lib, gpu::DeviceState &dev,
                                       const collectives::Comm &comm, int32_t rank,
                                       std::vector<DeviceSpan> spans, size_t bytes,
                                       size_t chunk_bytes, std::string what,
                                       StagingDirections directions)
    : lib_(lib),
      dev_(dev),
      comm_(comm),
      rank_(rank),
      spans_(std::move(spans)),
      bytes_(bytes),
      chunk_bytes_(chunk_bytes > 0 ? chunk_bytes : bytes),
      chunks_(staged_chunk_count(bytes, chunk_bytes)),
      what_(std::move(what)),
      directions_(directions) {
    gpu::make_staging_pipeline(*lib_, dev_);
    back_stream_ = chunks_ > 1 ? dev_.back_stream : dev_.stream;
    dev_.staging.reserve_pinned(
        lib_, dev_.device, std::max<size_t>(1, std::min(bytes_, kStagingSlots * chunk_bytes_)));
}

DeviceStagedChunks::~DeviceStagedChunks() {
    if (joined_) return;
    try {
        join();
    } catch (const std::exception &e) {
        try {
            HVD_LOG(kWarning, rank_,
                    "%s: ordering the copies back before the device's later work failed (%s)",
                    what_.c_str(), e.what());
        } catch (...) {  // no memory for the message: nothing more to say
        }
    }
}

void DeviceStagedChunks::join() {
    if (joined_) return;
    joined_ = true;  // tried once: a failure is not retried by the destructor
    if (back_stream_ == dev_.stream) return;
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    if (!gpu::join_back_stream(*lib_, dev_, &err))
        gpu::GpuLibrary::throw_failure("ordering the copies back before the stream's later work",
                                       err);
}

char *DeviceStagedChunks::arrive(const StagedChunk &chunk, hvd_status_t *status,
                                 std::string *message) {
    const size_t ahead = std::min(chunk.index + kStagingSlots, chunks_);
    for (; queued_ < ahead; ++queued_)
        queue_to_host(queued_);
    *status = gpu::wait_event(*lib_, dev_.device, dev_.arrived[chunk.index % kStagingSlots],
                              nccl_comm_, comm_.deadline, comm_.abort_status, rank_, what_, message,
                              comm_.transport_to_drive());
    if (*status == HVD_OK) return slot(chunk.index);
    *message += strprintf(directions_.to_host ? " (copying chunk %zu of %zu to the host)"
                                              : " (waiting for chunk %zu of %zu's slot)",
                          chunk.index + 1, chunks_);
    return nullptr;
}

void DeviceStagedChunks::done(const StagedChunk &chunk, char *at) {
    joined_ = false;
    if (directions_.to_device) copy_spans(chunk.offset, chunk.bytes, at, false, back_stream_);
    // Only a chunk that will reuse the slot waits for this departure.
    if (chunk.index + kStagingSlots < chunks_)
        lib_->call("cudaEventRecord (chunk copied back)", lib_->api->event_record, dev_.device,
                   dev_.departed[chunk.index % kStagingSlots], back_stream_);
}

char *DeviceStagedChunks::slot(size_t index) const {
    return dev_.staging.data() + (index % kStagingSlots) * chunk_bytes_;
}

void DeviceStagedChunks::queue_to_host(size_t index) {
    if (index >= kStagingSlots)  // the slot's last chunk must have left it
        lib_->call("cudaStreamWaitEvent (slot free)", lib_->api->stream_wait_event, dev_.device,
                   dev_.stream, dev_.departed[index % kStagingSlots]);
    const size_t offset = index * chunk_bytes_;
    if (directions_.to_host)
        copy_spans(offset, std::min(chunk_bytes_, bytes_ - offset), slot(index), true, dev_.stream);
    lib_->call("cudaEventRecord (chunk on the host)", lib_->api->event_record, dev_.device,
               dev_.arrived[index % kStagingSlots], dev_.stream);
}

void DeviceStagedChunks::copy_spans(size_t offset, size_t bytes, char *host, bool to_host,
                                    void *stream) const {
    const size_t end = offset + bytes;
    // The last span starting at or before offset holds it (zero-byte spans hold nothing).
    auto it = std::upper_bound(spans_.begin(), spans_.end(), offset,
                               [](size_t o, const DeviceSpan &s) { return o < s.offset; });
    if (it != spans_.begin()) --it;
    for (; it != spans_.end() && it->offset < end; ++it) {
        const size_t from = std::max(offset, it->offset);
        const size_t to = std::min(end, it->offset + it->bytes);
        if (from >= to || !(to_host ? it->to_host : it->to_device)) continue;
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

}  // namespace hvd::engine
