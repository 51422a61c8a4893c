// SPDX-License-Identifier: Apache-2.0
// Memory of the GPU module: device memory (a library-owned output, a fusion buffer) or pinned
// host memory (staging), freed when the buffer goes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/gpu_library.h"

namespace hvd::gpu {

class DeviceBuffer {
  public:
    enum class Kind : uint8_t { kDevice, kPinnedHost };
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    ~DeviceBuffer() { release(); }

    // Holds at least `bytes` bytes of `kind` memory (on `device` for device memory) afterwards,
    // keeping what it holds if that is large enough and of the same place (its contents are
    // then kept too); otherwise frees it and allocates anew (contents lost). Throws
    // hvd::Error(HVD_ERR_DEVICE) when the allocation fails. Not thread-safe.
    void reserve(const GpuLibrary *lib, Kind kind, int32_t device, size_t bytes);
    // Frees the memory (a failure to free is logged, never thrown).
    void release() noexcept;

    char *data() const { return data_; }
    size_t size() const { return size_; }
    int32_t device() const { return device_; }

  private:
    const GpuLibrary *lib_ = nullptr;
    Kind kind_ = Kind::kDevice;
    int32_t device_ = 0;
    char *data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace hvd::gpu
