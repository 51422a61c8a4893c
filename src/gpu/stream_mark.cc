// SPDX-License-Identifier: Apache-2.0
#include "gpu/stream_mark.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu/gpu_library.h"

namespace hvd::gpu {

namespace {

// Free events per device. Never destroyed: at exit the CUDA runtime may be gone before any
// destructor of ours would run, and the process's end frees the events anyway.
struct EventPool {
    std::mutex mu;
    std::map<int32_t, std::vector<void *>> free;
};

EventPool &pool() {
    static EventPool *p = new EventPool;
    return *p;
}

const GpuLibrary &module() {
    std::string problem;
    const GpuLibrary *lib = gpu_library(&problem);
    if (lib == nullptr)  // a CUDA tensor passed the enqueue checks only with the module loaded
        throw Error(HVD_ERR_INTERNAL, "a CUDA stream is marked without the GPU module: " + problem);
    return *lib;
}

}  // namespace

void StreamMark::record(int32_t device, void *stream) {
    release();
    const GpuLibrary &lib = module();
    void *e = nullptr;
    {
        EventPool &p = pool();
        std::lock_guard<std::mutex> lock(p.mu);
        std::vector<void *> &spare = p.free[device];
        if (!spare.empty()) {
            e = spare.back();
            spare.pop_back();
        }
    }
    if (e == nullptr) lib.call("cudaEventCreateWithFlags", lib.api->event_create, device, &e);
    device_ = device;
    event_ = e;  // back to the pool by release(), recorded or not
    lib.call("cudaEventRecord (the caller's stream)", lib.api->event_record, device, e, stream);
}

void StreamMark::release() noexcept {
    if (event_ == nullptr) return;
    EventPool &p = pool();
    try {
        std::lock_guard<std::mutex> lock(p.mu);
        p.free[device_].push_back(event_);
    } catch (...) {  // no memory for the free list: the event is left to the process's end
    }
    event_ = nullptr;
}

}  // namespace hvd::gpu
