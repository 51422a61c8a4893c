// SPDX-License-Identifier: Apache-2.0
#include "gpu/nccl_comms.h"

#include <cstring>
#include <vector>

#include "collectives/collectives.h"
#include "common/error.h"
#include "common/log.h"
#include "gpu/bounded_abort.h"
#include "gpu/device_state.h"

namespace hvd::gpu {

namespace {

// Waits until NCCL finished the communicator's last call (its initialisation included); throws
// on error, abort or the deadline.
void await_ready(const GpuLibrary &lib, void *nccl_comm, const collectives::Comm &comm,
                 int32_t rank) {
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    PollPause pause;
    for (;;) {
        int32_t in_progress = 0;
        if (lib.api->nccl_comm_status(nccl_comm, &in_progress, &err) != 0)
            throw Error(HVD_ERR_DEVICE, strprintf("rank %d: the NCCL communicator of process "
                                                  "set %u: %s",
                                                  rank, comm.set_id, err.text));
        if (!in_progress) return;
        if (comm.abort_status != nullptr) {
            int32_t s = comm.abort_status->load(std::memory_order_acquire);
            if (s != 0)
                throw Error(static_cast<hvd_status_t>(s),
                            strprintf("rank %d: the context aborted while the NCCL "
                                      "communicator of process set %u was busy",
                                      rank, comm.set_id));
        }
        if (comm.deadline.expired())
            throw Error(HVD_ERR_TIMED_OUT,
                        strprintf("rank %d: the NCCL communicator of process set %u timed out "
                                  "(a member did not take part)",
                                  rank, comm.set_id));
        // A peer may wait for bytes this rank's transport still holds (the unique id, say)
        // before it can join: keep driving it, as the other waits do across hosts.
        if (transport::Transport *t = comm.transport_to_drive()) t->progress();
        pause();
    }
}

}  // namespace

void *NcclComms::get(collectives::Comm &comm, int32_t device, uint64_t devices_key,
                     NcclScope scope) {
    Key key{comm.set_id, devices_key, scope};
    auto it = comms_.find(key);
    if (it != comms_.end()) return it->second;
    uint8_t id[HVD_GPU_NCCL_ID_BYTES] = {};
    // Member 0 must tell the others whether it has an id: a failure there must not leave them
    // waiting for one. The first byte after the id says so.
    uint8_t message[HVD_GPU_NCCL_ID_BYTES + 1] = {};
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    std::string local_failure;
    if (comm.my_index == 0) {
        if (lib_->api->nccl_unique_id(id, &err) == 0) {
            std::memcpy(message, id, sizeof id);
            message[HVD_GPU_NCCL_ID_BYTES] = 1;
        } else {
            local_failure = err.text;
        }
    }
    hvd_status_t s = collectives::broadcast(comm, message, sizeof message, 0);
    if (s != HVD_OK)
        throw Error(s, strprintf("rank %d: sending NCCL's unique id in process set %u failed: %s",
                                 rank_, comm.set_id, status_message(s)));
    if (message[HVD_GPU_NCCL_ID_BYTES] != 1)
        throw Error(HVD_ERR_DEVICE,
                    strprintf("rank %d: the NCCL communicator of process set %u cannot be made: "
                              "rank %d could not make NCCL's unique id%s%s",
                              rank_, comm.set_id, comm.members[0],
                              local_failure.empty() ? "" : ": ", local_failure.c_str()));
    std::memcpy(id, message, sizeof id);
    void *nc = nullptr;
    if (lib_->api->nccl_comm_init(device, comm.size(), comm.my_index, id, &nc, &err) != 0) {
        if (nc != nullptr) abort_within(lib_->api, {nc}, kAbortWait, rank_);
        throw Error(HVD_ERR_DEVICE, strprintf("rank %d: ncclCommInitRank in process set %u on "
                                              "CUDA device %d: %s",
                                              rank_, comm.set_id, device, err.text));
    }
    try {
        await_ready(*lib_, nc, comm, rank_);
    } catch (...) {
        abort_within(lib_->api, {nc}, kAbortWait, rank_);
        throw;
    }
    comms_[key] = nc;
    return nc;
}

void NcclComms::await_idle(void *nccl_comm, const collectives::Comm &comm) const {
    await_ready(*lib_, nccl_comm, comm, rank_);
}

void NcclComms::abort(void *nccl_comm) {
    for (auto it = comms_.begin(); it != comms_.end(); ++it) {
        if (it->second != nccl_comm) continue;
        comms_.erase(it);
        abort_within(lib_->api, {nccl_comm}, kAbortWait, rank_);
        return;
    }
}

void NcclComms::forget_set(uint16_t set_id) {
    std::vector<void *> gone;
    for (auto it = comms_.begin(); it != comms_.end();) {
        if (std::get<0>(it->first) != set_id) {
            ++it;
            continue;
        }
        gone.push_back(it->second);
        it = comms_.erase(it);
    }
    abort_within(lib_->api, gone, kAbortWait, rank_);
}

void NcclComms::abort_all() {
    std::vector<void *> all;
    for (const auto &[key, nc] : comms_)
        all.push_back(nc);
    comms_.clear();
    abort_within(lib_->api, all, kAbortWait, rank_);
}

}  // namespace hvd::gpu
