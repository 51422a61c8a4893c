// SPDX-License-Identifier: Apache-2.0
// Kernel launches of the module: scaling (prescale, postscale, Average) and batched copies
// in and out of the device fusion buffer. Both queue work on `stream` and return the launch's
// error; neither blocks.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/gpu_module_api.h"

namespace hvd::gpu_module {

// dst[i] = src[i] * factor, with reduce/scale.cc's rules per dtype (a hvd_dtype_t), integers
// divided by n where factor is exactly 1/n.
cudaError_t launch_scale(void *dst, const void *src, size_t count, int32_t dtype, double factor,
                         cudaStream_t stream);

// Up to HVD_GPU_COPY_BATCH copies (each a whole number of elements of dtype) in one kernel,
// every element scaled by factor (1.0: copied as is).
cudaError_t launch_copy_batch(const hvd_gpu_copy_t *copies, size_t n, int32_t dtype, double factor,
                              cudaStream_t stream);

}  // namespace hvd::gpu_module
