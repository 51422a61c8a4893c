// SPDX-License-Identifier: Apache-2.0
#include "gpu/device_buffer.h"

#include "common/log.h"

namespace hvd::gpu {

void DeviceBuffer::reserve(const GpuLibrary *lib, Kind kind, int32_t device, size_t bytes) {
    if (data_ != nullptr && size_ >= bytes && kind_ == kind &&
        (kind == Kind::kPinnedHost || device_ == device))
        return;
    release();
    void *p = nullptr;
    if (kind == Kind::kDevice)
        lib->call("cudaMalloc", lib->api->device_alloc, device, bytes, &p);
    else
        lib->call("cudaHostAlloc", lib->api->host_alloc, device, bytes, &p);
    lib_ = lib;
    kind_ = kind;
    device_ = device;
    data_ = static_cast<char *>(p);
    size_ = bytes;
}

void DeviceBuffer::release() noexcept {
    if (data_ == nullptr) return;
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    int rc = kind_ == Kind::kDevice ? lib_->api->device_free(device_, data_, &err)
                                    : lib_->api->host_free(device_, data_, &err);
    if (rc != 0) HVD_LOG(kWarning, -1, "freeing GPU memory failed: %s", err.text);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace hvd::gpu
