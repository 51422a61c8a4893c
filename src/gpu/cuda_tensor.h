// SPDX-License-Identifier: Apache-2.0
// The checks a CUDA tensor gets at enqueue, on the calling thread: a GPU module that found
// devices, a device id it knows, memory that is really on that device.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvd::gpu {

struct CudaTensorInfo {
    uint64_t device_key = 0;  // the device's identity across processes (a hash of its UUID)
    bool nccl_ok = false;     // NCCL loaded and HVD_GPU_OPERATIONS is not "host"
};

// Checks a CUDA tensor of `bytes` bytes at `data` on `device_id`, of elements of
// `element_size` bytes (fn and which name it in messages). Throws hvd::Error:
// HVD_ERR_UNSUPPORTED when no GPU module or device is usable (saying why),
// HVD_ERR_INVALID_ARG when the device id is out of range, the memory is not that device's or
// `data` is not aligned to its elements (the library's kernels load whole elements, and a
// misaligned load on a device is an error that ends the whole CUDA context), HVD_ERR_DEVICE
// when CUDA fails. Loads the GPU module on first use. Thread-safe.
CudaTensorInfo check_cuda_tensor(const char *fn, const char *which, const void *data,
                                 int32_t device_id, size_t bytes, size_t element_size);

// Refuses an op given `stream` (a cudaStream_t of device_id, checked by check_cuda_tensor
// before) while that stream is capturing a CUDA graph: the op's work runs on the library's
// streams after a negotiation among the ranks, which a graph cannot replay. fn and name (the
// op's) go into the message. Throws hvd::Error: HVD_ERR_UNSUPPORTED while capturing,
// HVD_ERR_DEVICE when CUDA fails. Thread-safe.
void check_not_capturing(const char *fn, const char *name, int32_t device_id, void *stream);

}  // namespace hvd::gpu
