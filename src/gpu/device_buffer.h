// SPDX-License-Identifier: Apache-2.0
// Memory of the GPU module: device memory (a library-owned output, a fusion buffer) or pinned
// host memory (staging), freed when the buffer goes. Device memory is allocated in stream
// order on the stream that uses it, and freed in stream order where the last use is known
// (release_on), so that neither waits for the whole device as cudaMalloc and cudaFree do.
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

    // Holds at least `bytes` bytes of device memory on `device` afterwards, for work queued on
    // `stream` (a cudaStream_t of `device`; null: its default stream) from now on. What it
    // holds is kept (contents too) if it is device memory of `device`, large enough; device
    // memory is otherwise freed in order on `stream` (so every earlier use of it must be
    // ordered before the work queued there now) and allocated anew there (contents lost).
    // Throws hvd::Error(HVD_ERR_DEVICE) when the allocation fails. Not thread-safe.
    void reserve_device(const GpuLibrary *lib, int32_t device, size_t bytes, void *stream);
    // Holds at least `bytes` bytes of pinned host memory afterwards (allocated with `device`
    // current), keeping what it holds (contents too) if that is pinned and large enough, else
    // freeing it (pinned: at once; device memory: as release()) and allocating anew.
    // Throws hvd::Error(HVD_ERR_DEVICE). Not thread-safe.
    void reserve_pinned(const GpuLibrary *lib, int32_t device, size_t bytes);
    // Frees the memory; device memory once every work queued on its device so far has run
    // (the host waits for the device). A failure to free is logged, never thrown.
    void release() noexcept;
    // Frees the memory; device memory in order on `stream` (a stream of its device; null: the
    // default stream), with no wait on the host: the caller has ordered every use of it before
    // the work queued on `stream` now. Pinned memory as release(). Never throws.
    void release_on(void *stream) noexcept;

    char *data() const { return data_; }
    size_t size() const { return size_; }
    int32_t device() const { return device_; }
    Kind kind() const { return kind_; }

  private:
    void free_now(bool ordered, void *stream) noexcept;

    const GpuLibrary *lib_ = nullptr;
    Kind kind_ = Kind::kDevice;
    int32_t device_ = 0;
    char *data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace hvd::gpu
