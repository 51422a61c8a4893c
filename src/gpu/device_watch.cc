// SPDX-License-Identifier: Apache-2.0
#include "gpu/device_watch.h"

#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "gpu/device_state.h"

namespace hvd::gpu {

namespace {

void destroy_event(const GpuLibrary &lib, int32_t device, void *event) {
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    if (lib.api->event_destroy(device, event, &err) != 0)
        HVD_LOG(kWarning, -1, "freeing an event of CUDA device %d failed: %s", device, err.text);
}

}  // namespace

DeviceWatch::~DeviceWatch() {
    forget_all();
    for (auto &[device, events] : free_events_)
        for (void *e : events)
            destroy_event(*lib_, device, e);
}

void *DeviceWatch::take_event(int32_t device) {
    std::vector<void *> &spare = free_events_[device];
    if (!spare.empty()) {
        void *e = spare.back();
        spare.pop_back();
        return e;
    }
    void *e = nullptr;
    lib_->call("cudaEventCreateWithFlags", lib_->api->event_create, device, &e);
    return e;
}

void DeviceWatch::recycle(Entry &e) {
    free_events_[e.op.device].push_back(e.event);
    e.event = nullptr;
}

void DeviceWatch::forget_all() {
    for (auto &[device, queue] : entries_)
        for (Entry &e : queue)
            destroy_event(*lib_, device, e.event);
    entries_.clear();
}

bool DeviceWatch::busy() const {
    for (const auto &[device, queue] : entries_)
        if (!queue.empty()) return true;
    return false;
}

hvd_status_t DeviceWatch::watch(WatchedOp op, const std::atomic<int32_t> *abort,
                                transport::Transport *drive, void **event, std::string *message) {
    const int32_t device = op.device;
    if (entries_[device].size() >= kMaxPerDevice) {
        const Entry &oldest = entries_[device].front();
        hvd_status_t s =
            wait_event(*lib_, device, oldest.event, oldest.op.nccl_comm, oldest.op.deadline, abort,
                       rank_, oldest.op.what, message, drive);
        if (s != HVD_OK) {
            forget_all();
            return s;
        }
        s = check(message);  // takes the oldest (and whatever ended with it) off the list
        if (s != HVD_OK) return s;
    }
    void *e = take_event(device);
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    if (lib_->api->event_record(device, e, op.stream, &err) != 0) {
        free_events_[device].push_back(e);
        GpuLibrary::throw_failure("cudaEventRecord", err);
    }
    try {
        entries_[device].push_back(Entry{std::move(op), e});
    } catch (...) {
        destroy_event(*lib_, device, e);  // its wait is not queued yet: nothing needs it
        throw;
    }
    *event = e;
    return HVD_OK;
}

hvd_status_t DeviceWatch::check(std::string *message) {
    hvd_status_t s = HVD_OK;
    auto fail = [&](hvd_status_t status, const Entry &e, const std::string &why) {
        *message = strprintf("rank %d: %s (its request completed on the caller's stream) %s", rank_,
                             e.op.what.c_str(), why.c_str());
        s = status;
    };
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    for (auto &[device, queue] : entries_) {
        // Work on one stream ends in order: the finished ops are at the front.
        while (!queue.empty()) {
            Entry &e = queue.front();
            int32_t done = 0;
            if (lib_->api->event_query(device, e.event, &done, &err) != 0) {
                fail(HVD_ERR_DEVICE, e, std::string("failed on the device: ") + err.text);
                break;
            }
            if (!done) break;
            recycle(e);
            queue.pop_front();
        }
        if (s != HVD_OK) break;
        void *checked = nullptr;  // consecutive ops mostly share a communicator
        for (const Entry &e : queue) {
            if (e.op.nccl_comm != nullptr && e.op.nccl_comm != checked) {
                int32_t in_progress = 0;
                if (lib_->api->nccl_comm_status(e.op.nccl_comm, &in_progress, &err) != 0) {
                    fail(HVD_ERR_DEVICE, e, std::string("failed in NCCL: ") + err.text);
                    break;
                }
                checked = e.op.nccl_comm;
            }
            if (e.op.deadline.expired()) {
                fail(HVD_ERR_TIMED_OUT, e,
                     "did not end on the device before its deadline (HVD_OP_TIMEOUT)");
                break;
            }
        }
        if (s != HVD_OK) break;
    }
    if (s != HVD_OK) forget_all();
    return s;
}

void DeviceWatch::forget_comm(void *nccl_comm) {
    for (auto &[device, queue] : entries_)
        for (Entry &e : queue)
            if (nccl_comm == nullptr || e.op.nccl_comm == nccl_comm) e.op.nccl_comm = nullptr;
}

}  // namespace hvd::gpu
