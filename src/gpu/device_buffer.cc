// SPDX-License-Identifier: Apache-2.0
#include "gpu/device_buffer.h"

#include "common/log.h"

namespace hvd::gpu {

void DeviceBuffer::reserve_device(const GpuLibrary *lib, int32_t device, size_t bytes,
                                  void *stream) {
    if (data_ != nullptr && size_ >= bytes && kind_ == Kind::kDevice && device_ == device) return;
    if (kind_ == Kind::kDevice && device_ == device)
        release_on(stream);
    else
        release();
    void *p = nullptr;
    lib->call("allocating GPU memory", lib->api->device_alloc, device, bytes, stream, &p);
    lib_ = lib;
    kind_ = Kind::kDevice;
    device_ = device;
    data_ = static_cast<char *>(p);
    size_ = bytes;
}

void DeviceBuffer::reserve_pinned(const GpuLibrary *lib, int32_t device, size_t bytes) {
    if (data_ != nullptr && size_ >= bytes && kind_ == Kind::kPinnedHost) return;
    release();
    void *p = nullptr;
    lib->call("cudaHostAlloc", lib->api->host_alloc, device, bytes, &p);
    lib_ = lib;
    kind_ = Kind::kPinnedHost;
    device_ = device;
    data_ = static_cast<char *>(p);
    size_ = bytes;
}

void DeviceBuffer::release() noexcept {
    free_now(false, nullptr);
}

void DeviceBuffer::release_on(void *stream) noexcept {
    free_now(true, stream);
}

void DeviceBuffer::free_now(bool ordered, void *stream) noexcept {
    if (data_ == nullptr) return;
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    int rc = 0;
    if (kind_ == Kind::kPinnedHost)
        rc = lib_->api->host_free(device_, data_, &err);
    else if (ordered)
        rc = lib_->api->device_free_on(device_, data_, stream, &err);
    else
        rc = lib_->api->device_free(device_, data_, &err);
    if (rc != 0)
        HVD_LOG(kWarning, -1, "freeing %zu bytes of GPU memory (CUDA device %d) failed: %s", size_,
                device_, err.text);
    data_ = nullptr;
    size_ = 0;
}

}  // namespace hvd::gpu
