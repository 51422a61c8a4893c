// SPDX-License-Identifier: Apache-2.0
// NCCL communicators of a context: one per process set and set of devices (the response's
// devices_key), and one more among the set's ranks on this host where the hierarchical
// allreduce or allgather runs, made when the first op that needs it runs, through libhvd's own
// connections (NCCL's unique id is broadcast from the first member over the members' host
// collective), and aborted when the set or the context goes. Engine thread only.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>

#include "collectives/comm.h"
#include "gpu/gpu_library.h"

namespace hvd::gpu {

// The members of a communicator: every member of the process set, or the set's ranks on this
// host (the hierarchical allreduce's and allgather's steps within a host).
enum class NcclScope : uint8_t { kSet = 0, kHost = 1 };

class NcclComms {
  public:
    NcclComms(const GpuLibrary *lib, int32_t rank) : lib_(lib), rank_(rank) {}
    NcclComms(const NcclComms &) = delete;
    NcclComms &operator=(const NcclComms &) = delete;
    ~NcclComms() { abort_all(); }

    // The communicator for comm's members (`scope` tells which members those are, so that a
    // set's two communicators are kept apart), this rank on `device`. Every member calls it at
    // the same point of the job's order (from the same response), so all make a missing one
    // together: within comm.deadline, failing with the abort status when the context aborts.
    // Throws hvd::Error (HVD_ERR_DEVICE with NCCL's message, HVD_ERR_TIMED_OUT, ...).
    void *get(collectives::Comm &comm, int32_t device, uint64_t devices_key,
              NcclScope scope = NcclScope::kSet);
    // Waits until the communicator finished its last call: on a non-blocking communicator a
    // call (or a group's end) may return before its work is queued on the stream, and nothing
    // may be queued after it, nor another NCCL call made, until then. Bounded by comm's
    // deadline and abort flag; throws hvd::Error (HVD_ERR_DEVICE with NCCL's message,
    // HVD_ERR_TIMED_OUT, the abort status).
    void await_idle(void *nccl_comm, const collectives::Comm &comm) const;
    // Aborts the communicator (after one of its ops failed: NCCL's state is then unknown) and
    // forgets it. Never throws. Every abort here waits at most kAbortWait for NCCL
    // (bounded_abort.h).
    void abort(void *nccl_comm);
    // Aborts the communicators of a process set that was destroyed.
    void forget_set(uint16_t set_id);
    void abort_all();

  private:
    using Key = std::tuple<uint16_t, uint64_t, NcclScope>;
    const GpuLibrary *lib_;
    int32_t rank_;
    std::map<Key, void *> comms_;
};

}  // namespace hvd::gpu
