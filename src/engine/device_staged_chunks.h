// SPDX-License-Identifier: Apache-2.0
// The CUDA side of the host-staged collectives in chunks (staged_chunks.h): the run's CUDA
// tensors are one buffer of bytes, cut into chunks that pass through gpu::kStagingSlots slots of
// pinned host memory. Copies to the host run on the device's stream, copies back on its back
// stream, so both directions and the CPU collectives work at once:
//
//   stream       D2H 0 | D2H 1 | D2H 2 | D2H 3 | (waits: 0 departed) D2H 4 ...
//   host               | reduce 0 | reduce 1 | reduce 2 ...
//   back stream                   | H2D 0    | H2D 1    | H2D 2 ...
//
// Chunk k reuses slot k % kStagingSlots once chunk k - kStagingSlots has left it: the stream
// waits for that chunk's departure event before copying into the slot. While chunk k is
// reduced, the copies of up to kStagingSlots - 1 later chunks are queued. A copy back is queued
// only after the host saw its chunk arrive, so it follows everything the stream waited for
// before (ready events, the caller's stream). join() makes the stream wait for the back
// stream, so everything later on the stream (the op's end event, the next op) comes after the
// copies back. A run of one chunk copies back on the stream itself.
//
// The tensors of a run must not overlap (an output overlapping a later tensor's input could be
// written before that input was copied); a span in place has device_in == device_out (and
// comes back only where the host changes it). Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/comm.h"
#include "engine/staged_chunks.h"
#include "gpu/device_state.h"
#include "gpu/gpu_library.h"

namespace hvd::engine {

// One tensor of the run (or a piece of one): where its bytes are in the run and on the device,
// and which way they travel (a piece that others' data fills on the host is not copied there,
// one whose result is already on the device not copied back).
struct DeviceSpan {
    size_t offset, bytes;
    const void *device_in;
    void *device_out;
    bool to_host = true;
    bool to_device = true;
};

// Appends `piece` to `spans`, or extends the last span where the piece continues it in the run
// and on the device (its output too, where it is copied back) and travels the same ways: one
// copy instead of two.
void append_span(std::vector<DeviceSpan> *spans, const DeviceSpan &piece);

// Which way this rank's chunks travel: a broadcast's root needs no copy back into its own
// input, the other members no copy of theirs to the host.
struct StagingDirections {
    bool to_host = true;
    bool to_device = true;
};

class DeviceStagedChunks : public StagedChunks {
  public:
    // spans: the run's tensors (or pieces of them) in order of offset, within [0, `bytes`)
    // and not overlapping (bytes no span covers are neither copied nor copied back), each
    // with its directions; chunk_bytes: 0
    // for one chunk; dev: their device's state, whose staging pipeline (made here where
    // missing, gpu::make_staging_pipeline) and dev.staging (made to hold at least
    // min(bytes, kStagingSlots * chunk_bytes) bytes) the chunks go through. comm: the op's
    // deadline, abort flag and transport to drive while waiting. what: the op, for messages.
    // Throws hvd::Error(HVD_ERR_DEVICE) where CUDA refuses the streams, events or memory.
    DeviceStagedChunks(const gpu::GpuLibrary *lib, gpu::DeviceState &dev,
                       const collectives::Comm &comm, int32_t rank, std::vector<DeviceSpan> spans,
                       size_t bytes, size_t chunk_bytes, std::string what,
                       StagingDirections directions = {});
    DeviceStagedChunks(const DeviceStagedChunks &) = delete;
    DeviceStagedChunks &operator=(const DeviceStagedChunks &) = delete;
    // join() where it was not called (after a failure): a failure then is logged.
    ~DeviceStagedChunks();

    // Queues the copies of the chunks up to kStagingSlots - 1 past this one, then waits on the
    // host for this one's (gpu::wait_event: CUDA's errors, the deadline, the abort flag); with
    // no copies to the host, for its slot to be free.
    // Throws hvd::Error(HVD_ERR_DEVICE) where queueing fails.
    char *arrive(const StagedChunk &chunk, hvd_status_t *status, std::string *message) override;
    // Queues the chunk's copies back into the outputs. Throws hvd::Error(HVD_ERR_DEVICE).
    void done(const StagedChunk &chunk, char *at) override;
    // Makes the device's stream wait for every copy back queued so far. Throws
    // hvd::Error(HVD_ERR_DEVICE).
    void join();
    // The NCCL communicator whose work precedes the chunks on the stream: the waits for the
    // chunks fail as soon as it reports an asynchronous error (null: none).
    void poll_nccl(void *nccl_comm) { nccl_comm_ = nccl_comm; }

  private:
    char *slot(size_t index) const;
    void queue_to_host(size_t index);
    // Copies the run's bytes [offset, offset + bytes) between the tensors and host memory at
    // `host`: from the inputs (to_host) or into the outputs, on `stream`.
    void copy_spans(size_t offset, size_t bytes, char *host, bool to_host, void *stream) const;

    const gpu::GpuLibrary *lib_;
    gpu::DeviceState &dev_;
    const collectives::Comm &comm_;
    int32_t rank_;
    std::vector<DeviceSpan> spans_;
    size_t bytes_, chunk_bytes_, chunks_;
    void *back_stream_ = nullptr;  // dev.back_stream, or dev.stream for a run of one chunk
    size_t queued_ = 0;            // chunks whose copy to the host is queued
    bool joined_ = true;           // no copy back queued since the last join
    std::string what_;
    StagingDirections directions_;
    void *nccl_comm_ = nullptr;
};

}  // namespace hvd::engine
