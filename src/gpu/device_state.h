// SPDX-License-Identifier: Apache-2.0
// What one context's engine keeps per CUDA device: its stream (all of the library's work on
// the device is ordered on it; the staged allreduce's copies back run on a second stream,
// joined into it), the event that marks the end of an op's work, the device fusion buffer, a
// device scratch buffer and pinned host staging. Made on first use, freed with the context.
// Engine thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "gpu/device_buffer.h"
#include "gpu/gpu_library.h"
#include "transport/transport.h"

namespace hvd::gpu {

struct DeviceState {
    int32_t device = 0;
    void *stream = nullptr;
    void *done = nullptr;  // recorded after each op's work on `stream`
    DeviceBuffer fusion;   // device: fused allreduce input and output
    DeviceBuffer scratch;  // device: prescaled copies
    DeviceBuffer staging;  // pinned host: the host-staged path's copies
    // The chunked staged allreduce (engine/staged_allreduce.h), made on its first run by
    // make_staging_pipeline: the stream its copies back to the device run on, the event that
    // joins that stream into `stream` at the end, and per slot of `staging` the events that
    // mark a chunk's arrival on the host (on `stream`) and its departure (on back_stream).
    void *back_stream = nullptr;
    void *back_done = nullptr;
    std::vector<void *> arrived, departed;
};

// The staging slots of the chunked staged allreduce: while the CPU collectives reduce one
// chunk, the next is on its way to the host and the one before on its way back.
constexpr size_t kStagingSlots = 4;

// Makes dev.stream wait for the work queued on dev.back_stream so far (through dev.back_done).
// False with *err (CUDA's message) when CUDA refuses.
bool join_back_stream(const GpuLibrary &lib, DeviceState &dev, hvd_gpu_err_t *err);

// Makes dev's back_stream, back_done and kStagingSlots events of each kind, where missing.
// Throws hvd::Error(HVD_ERR_DEVICE); what was made stays (freed with the device's state).
void make_staging_pipeline(const GpuLibrary &lib, DeviceState &dev);

class DeviceStates {
  public:
    explicit DeviceStates(const GpuLibrary *lib) : lib_(lib) {}
    DeviceStates(const DeviceStates &) = delete;
    DeviceStates &operator=(const DeviceStates &) = delete;
    // Waits (a bounded time) for the work queued on each stream, then frees everything.
    ~DeviceStates();

    // The device's state, made on first use. Throws hvd::Error(HVD_ERR_DEVICE).
    DeviceState &get(int32_t device);
    // Waits (bounded) until the work queued on every device's stream is done. Returns false
    // when some device's work did not finish in time (or its wait failed).
    bool drain();
    const GpuLibrary *library() const { return lib_; }

  private:
    const GpuLibrary *lib_;
    std::map<int32_t, std::unique_ptr<DeviceState>> devices_;
};

// Records dev.done after the work queued on dev.stream (and on dev.back_stream, joined into it)
// and waits on the host until it has run, bounded by `deadline` alone (no abort flag), driving
// `drive` (null: none) as wait_event does.
// False when it did not finish in time or CUDA failed (`rank` and `what` name it for the wait).
bool wait_stream_done(const GpuLibrary &lib, DeviceState &dev, const Deadline &deadline,
                      int32_t rank, const std::string &what, transport::Transport *drive = nullptr);

// The pause between two polls of the device or of NCCL: a yield for the first 50 us of the
// wait (short collectives, NCCL's launches), then naps of 20 us. Not thread-safe; one per wait.
class PollPause {
  public:
    void operator()();

  private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Waits on the host until `event` (of `device`) has completed, polling: fails with HVD_ERR_DEVICE
// when CUDA or the NCCL communicator (`nccl_comm`, may be null) reports an error, with the abort
// status when *abort becomes nonzero, HVD_ERR_TIMED_OUT at the deadline. *message says what, naming
// `rank` and `what`. With `drive` (null: none), every poll also drives that transport, as
// shared-memory waits do (Transport::sends_need_progress): the event may wait on peers (NCCL)
// that wait for bytes the transport still holds. The caller must be allowed to drive it.
hvd_status_t wait_event(const GpuLibrary &lib, int32_t device, void *event, void *nccl_comm,
                        const Deadline &deadline, const std::atomic<int32_t> *abort, int32_t rank,
                        const std::string &what, std::string *message,
                        transport::Transport *drive = nullptr);

}  // namespace hvd::gpu
