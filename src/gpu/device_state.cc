// SPDX-License-Identifier: Apache-2.0
#include "gpu/device_state.h"

#include <chrono>
#include <thread>

#include "common/error.h"
#include "common/log.h"

namespace hvd::gpu {

namespace {

constexpr auto kSpin = std::chrono::microseconds(50);  // PollPause
constexpr auto kNap = std::chrono::microseconds(20);
// How long the teardown waits for a stream's queued work.
constexpr int64_t kTeardownWaitMs = 10000;

}  // namespace

DeviceState &DeviceStates::get(int32_t device) {
    auto it = devices_.find(device);
    if (it != devices_.end()) return *it->second;
    auto d = std::make_unique<DeviceState>();
    d->device = device;
    lib_->call("cudaStreamCreateWithFlags", lib_->api->stream_create, device, &d->stream);
    try {
        lib_->call("cudaEventCreateWithFlags", lib_->api->event_create, device, &d->done);
    } catch (...) {
        hvd_gpu_err_t err;
        lib_->api->stream_destroy(device, d->stream, &err);
        throw;
    }
    return *(devices_[device] = std::move(d));
}

bool join_back_stream(const GpuLibrary &lib, DeviceState &dev, hvd_gpu_err_t *err) {
    return lib.api->event_record(dev.device, dev.back_done, dev.back_stream, err) == 0 &&
           lib.api->stream_wait_event(dev.device, dev.stream, dev.back_done, err) == 0;
}

void make_staging_pipeline(const GpuLibrary &lib, DeviceState &dev) {
    if (dev.back_stream == nullptr)
        lib.call("cudaStreamCreateWithFlags", lib.api->stream_create, dev.device, &dev.back_stream);
    if (dev.back_done == nullptr)
        lib.call("cudaEventCreateWithFlags", lib.api->event_create, dev.device, &dev.back_done);
    for (std::vector<void *> *events : {&dev.arrived, &dev.departed}) {
        events->reserve(kStagingSlots);  // no push_back throws after an event was made
        while (events->size() < kStagingSlots) {
            void *e = nullptr;
            lib.call("cudaEventCreateWithFlags", lib.api->event_create, dev.device, &e);
            events->push_back(e);
        }
    }
}

bool DeviceStates::drain() {
    bool finished = true;
    for (auto &[device, d] : devices_) {
        const bool done = wait_stream_done(*lib_, *d, Deadline::after_ms(kTeardownWaitMs), -1,
                                           "the context's GPU work");
        finished = finished && done;
    }
    return finished;
}

bool wait_stream_done(const GpuLibrary &lib, DeviceState &dev, const Deadline &deadline,
                      int32_t rank, const std::string &what, transport::Transport *drive) {
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    std::string ignored;
    // Copies back that a failed run left on the back stream count as the stream's work too.
    if (dev.back_stream != nullptr && dev.back_done != nullptr && !join_back_stream(lib, dev, &err))
        return false;
    return lib.api->event_record(dev.device, dev.done, dev.stream, &err) == 0 &&
           wait_event(lib, dev.device, dev.done, nullptr, deadline, nullptr, rank, what, &ignored,
                      drive) == HVD_OK;
}

DeviceStates::~DeviceStates() {
    drain();
    for (auto &[device, d] : devices_) {
        hvd_gpu_err_t err;
        err.text[0] = '\0';
        // Every use of them was on the stream: freed in order there, without waiting for
        // the caller's work on the device.
        d->fusion.release_on(d->stream);
        d->scratch.release_on(d->stream);
        d->staging.release();
        bool freed = true;
        for (std::vector<void *> *events : {&d->arrived, &d->departed})
            for (void *e : *events)
                freed = lib_->api->event_destroy(device, e, &err) == 0 && freed;
        if (d->back_done != nullptr)
            freed = lib_->api->event_destroy(device, d->back_done, &err) == 0 && freed;
        if (d->back_stream != nullptr)
            freed = lib_->api->stream_destroy(device, d->back_stream, &err) == 0 && freed;
        freed = lib_->api->event_destroy(device, d->done, &err) == 0 && freed;
        freed = lib_->api->stream_destroy(device, d->stream, &err) == 0 && freed;
        if (!freed)
            HVD_LOG(kWarning, -1, "freeing CUDA device %d's streams failed: %s", device, err.text);
    }
}

void PollPause::operator()() {
    if (std::chrono::steady_clock::now() - start_ > kSpin)
        std::this_thread::sleep_for(kNap);
    else
        std::this_thread::yield();
}

hvd_status_t wait_event(const GpuLibrary &lib, int32_t device, void *event, void *nccl_comm,
                        const Deadline &deadline, const std::atomic<int32_t> *abort, int32_t rank,
                        const std::string &what, std::string *message,
                        transport::Transport *drive) {
    PollPause pause;
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    for (;;) {
        int32_t done = 0;
        if (lib.api->event_query(device, event, &done, &err) != 0) {
            *message = strprintf("rank %d: %s: %s", rank, what.c_str(), err.text);
            return HVD_ERR_DEVICE;
        }
        if (done) return HVD_OK;
        if (nccl_comm != nullptr) {
            int32_t in_progress = 0;
            if (lib.api->nccl_comm_status(nccl_comm, &in_progress, &err) != 0) {
                *message = strprintf("rank %d: %s: %s", rank, what.c_str(), err.text);
                return HVD_ERR_DEVICE;
            }
        }
        if (abort != nullptr) {
            int32_t s = abort->load(std::memory_order_acquire);
            if (s != 0) {
                *message = strprintf("rank %d: %s: the context aborted", rank, what.c_str());
                return static_cast<hvd_status_t>(s);
            }
        }
        if (deadline.expired()) {
            *message = strprintf("rank %d: %s timed out on the GPU", rank, what.c_str());
            return HVD_ERR_TIMED_OUT;
        }
        if (drive != nullptr) drive->progress();
        pause();
    }
}

}  // namespace hvd::gpu
