// SPDX-License-Identifier: Apache-2.0
#include "gpu/cuda_tensor.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "common/error.h"
#include "config/read.h"
#include "gpu/gpu_library.h"

namespace hvd::gpu {

namespace {

// FNV-1a of the device's UUID; never 0 (0 marks a host tensor).
uint64_t device_key_of(const GpuLibrary &lib, int32_t device) {
    static std::mutex mu;
    static std::unordered_map<int32_t, uint64_t> keys;
    std::lock_guard<std::mutex> lock(mu);
    auto it = keys.find(device);
    if (it != keys.end()) return it->second;
    uint8_t uuid[16];
    lib.call("cudaGetDeviceProperties", lib.api->device_uuid, device, uuid);
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : uuid) {
        h ^= b;
        h *= 1099511628211ull;
    }
    if (h == 0) h = 1;
    keys[device] = h;
    return h;
}

bool host_operations_asked() {
    const char *v = config::get_string(config::Setting::kGpuOperations);
    return v != nullptr && std::strcmp(v, "host") == 0;
}

}  // namespace

CudaTensorInfo check_cuda_tensor(const char *fn, const char *which, const void *data,
                                 int32_t device_id, size_t bytes, size_t element_size) {
    std::string why = cuda_unusable_reason();
    if (!why.empty())
        throw Error(HVD_ERR_UNSUPPORTED, strprintf("%s: the %s tensor is on CUDA device %d: %s", fn,
                                                   which, device_id, why.c_str()));
    const GpuLibrary &lib = *gpu_library(nullptr);
    if (device_id < 0 || device_id >= lib.info.device_count)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("%s: the %s tensor's CUDA device %d does not exist (this process "
                              "sees %d)",
                              fn, which, device_id, lib.info.device_count));
    if (bytes > 0 && element_size > 1 && reinterpret_cast<uintptr_t>(data) % element_size != 0)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("%s: the %s tensor's data %p on CUDA device %d is not aligned to "
                              "its %zu-byte elements",
                              fn, which, data, device_id, element_size));
    if (bytes > 0) {
        int32_t is_device = 0, device = -1;
        lib.call("cudaPointerGetAttributes", lib.api->pointer_device, device_id, data, &is_device,
                 &device);
        if (!is_device || device != device_id)
            throw Error(HVD_ERR_INVALID_ARG,
                        strprintf("%s: the %s tensor's data %p is not memory of CUDA device %d "
                                  "(%s)",
                                  fn, which, data, device_id,
                                  is_device ? strprintf("it is device %d's", device).c_str()
                                            : "it is host memory"));
    }
    CudaTensorInfo info;
    info.device_key = device_key_of(lib, device_id);
    info.nccl_ok = lib.nccl_usable() && !host_operations_asked();
    return info;
}

void check_not_capturing(const char *fn, const char *name, int32_t device_id, void *stream) {
    const GpuLibrary &lib = *gpu_library(nullptr);
    int32_t capturing = 0;
    lib.call("cudaStreamIsCapturing", lib.api->stream_capturing, device_id, stream, &capturing);
    if (capturing)
        throw Error(HVD_ERR_UNSUPPORTED,
                    strprintf("%s: '%s': the given stream is capturing a CUDA graph, and "
                              "libhvd's ops cannot be captured (they run on the library's own "
                              "streams and negotiate with the other ranks on the host): enqueue "
                              "them outside the capture",
                              fn, name));
}

}  // namespace hvd::gpu
