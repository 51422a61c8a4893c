// SPDX-License-Identifier: Apache-2.0
// The device work of ops whose requests completed at once, their outputs promised on the
// callers' streams: nobody waits for it on the host, yet it can fail (a CUDA error, an NCCL
// communicator's asynchronous error) or never end (an NCCL kernel waiting for a peer that is
// gone). Each such op gets an event recorded after its work; check() polls them without
// blocking and reports the first that failed or outlived its deadline, so that the engine
// aborts the context, and with it the communicators, whose kernels then end instead of
// holding the callers' streams forever. Engine thread only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "gpu/gpu_library.h"
#include "hvd/hvd.h"
#include "transport/transport.h"

namespace hvd::gpu {

// One op handed to the watch.
struct WatchedOp {
    int32_t device = 0;
    void *stream = nullptr;     // the library's stream of the device, where its work is queued
    void *nccl_comm = nullptr;  // the communicator it used (null: none)
    Deadline deadline;          // when its work must have ended
    std::string what;           // "allreduce 'grad.0' on CUDA device 0"
};

class DeviceWatch {
  public:
    // At most this many ops per device are watched at once: the next one first waits on the
    // host for the oldest, so a caller never queues device work without bound.
    static constexpr size_t kMaxPerDevice = 256;

    DeviceWatch(const GpuLibrary *lib, int32_t rank) : lib_(lib), rank_(rank) {}
    DeviceWatch(const DeviceWatch &) = delete;
    DeviceWatch &operator=(const DeviceWatch &) = delete;
    // Destroys the events; CUDA frees those still pending once their work ends.
    ~DeviceWatch();

    // Records an event after the op's work on op.stream and returns it through *event (owned
    // by the watch; the callers' streams wait on it). With kMaxPerDevice ops of the device
    // already watched, it first waits on the host for the oldest (bounded by that op's
    // deadline and *abort, driving `drive` as wait_event does); a failure there is returned
    // with *message, as check() would, and nothing is recorded. Throws hvd::Error
    // (HVD_ERR_DEVICE) when CUDA refuses the event.
    hvd_status_t watch(WatchedOp op, const std::atomic<int32_t> *abort, transport::Transport *drive,
                       void **event, std::string *message);

    // Polls every watched op, never blocking: those whose event completed are done with.
    // HVD_OK, or the first failure, *message naming this rank and the op: HVD_ERR_DEVICE (CUDA's
    // or NCCL's message), HVD_ERR_TIMED_OUT (the op's work outlived its deadline). After a
    // failure nothing is watched any more: the caller aborts the context.
    hvd_status_t check(std::string *message);

    // Whether some op is still watched (the engine then polls again soon).
    bool busy() const;

    // The communicator was aborted or destroyed (null: all of them): the ops that used it are
    // still watched, by their events only.
    void forget_comm(void *nccl_comm);
    // Every communicator was aborted or destroyed.
    void forget_comms() { forget_comm(nullptr); }
    // Nothing is watched any more (after a failure, or the context aborted: the work still
    // queued ends with the aborted communicators; its events go once it has).
    void forget_all();

  private:
    struct Entry {
        WatchedOp op;
        void *event = nullptr;
    };
    // Returns the entry's event to its device's free list.
    void recycle(Entry &e);
    void *take_event(int32_t device);

    const GpuLibrary *lib_;
    int32_t rank_;
    std::map<int32_t, std::deque<Entry>> entries_;        // per device, oldest first
    std::map<int32_t, std::vector<void *>> free_events_;  // per device
};

}  // namespace hvd::gpu
