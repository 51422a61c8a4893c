// SPDX-License-Identifier: Apache-2.0
// Scaling and batched copies on the device, with the host's precision rules (reduce/scale.cc):
// integers through float64, truncated toward zero and saturated, divided by n where the factor
// is exactly 1/n (reduce/integer_divisor.h, found once per launch on the host); float16/bfloat16
// in float32; float32 with the factor rounded to float; bool kept unless the factor is 0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/module/scale_kernels.h"
#include "hvd/hvd.h"
#include "reduce/integer_divisor.h"

namespace hvd::gpu_module {

namespace {

template <class T>
__device__ T saturate_from_double(double v, double lowest, double past_max, T min, T max) {
    if (v != v) return 0;
    if (v >= past_max) return max;
    if (v <= lowest) return min;
    return static_cast<T>(v);
}

template <class T>
struct Scaler;

#define HVD_INTEGER_SCALER(T, MIN, MAX)                                                         \
    template <>                                                                                 \
    struct Scaler<T> {                                                                          \
        __device__ static T apply(T x, double f, double divisor) {                              \
            const double v =                                                                    \
                divisor != 0.0 ? static_cast<double>(x) / divisor : static_cast<double>(x) * f; \
            return saturate_from_double<T>(v, static_cast<double>(MIN),                         \
                                           static_cast<double>((MAX) / 2 + 1) * 2.0, MIN, MAX); \
        }                                                                                       \
    };
HVD_INTEGER_SCALER(uint8_t, 0, UINT8_MAX)
HVD_INTEGER_SCALER(int8_t, INT8_MIN, INT8_MAX)
HVD_INTEGER_SCALER(uint16_t, 0, UINT16_MAX)
HVD_INTEGER_SCALER(int16_t, INT16_MIN, INT16_MAX)
HVD_INTEGER_SCALER(int32_t, INT32_MIN, INT32_MAX)
HVD_INTEGER_SCALER(int64_t, INT64_MIN, INT64_MAX)
#undef HVD_INTEGER_SCALER

template <>
struct Scaler<float> {
    __device__ static float apply(float x, double f, double) { return x * static_cast<float>(f); }
};
template <>
struct Scaler<double> {
    __device__ static double apply(double x, double f, double) { return x * f; }
};
template <>
struct Scaler<__half> {
    __device__ static __half apply(__half x, double f, double) {
        return __float2half_rn(__half2float(x) * static_cast<float>(f));
    }
};
template <>
struct Scaler<__nv_bfloat16> {
    __device__ static __nv_bfloat16 apply(__nv_bfloat16 x, double f, double) {
        return __float2bfloat16_rn(__bfloat162float(x) * static_cast<float>(f));
    }
};
struct Bool {
    uint8_t v;
};
template <>
struct Scaler<Bool> {
    __device__ static Bool apply(Bool x, double f, double) {
        return Bool{f == 0.0 ? uint8_t{0} : x.v};
    }
};

template <class T>
__global__ void scale_kernel(T *dst, const T *src, size_t count, double factor, double divisor) {
    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride)
        dst[i] = Scaler<T>::apply(src[i], factor, divisor);
}

struct CopyBatch {
    hvd_gpu_copy_t copies[HVD_GPU_COPY_BATCH];
    uint32_t n;
};

// Block b works on copy b % n; the blocks of one copy stride over its elements.
template <class T>
__global__ void copy_batch_kernel(CopyBatch batch, double factor, double divisor, bool scale) {
    const uint32_t which = blockIdx.x % batch.n;
    const uint32_t blocks_per_copy = gridDim.x / batch.n;
    const uint32_t part = blockIdx.x / batch.n;
    const hvd_gpu_copy_t c = batch.copies[which];
    T *dst = static_cast<T *>(c.dst);
    const T *src = static_cast<const T *>(c.src);
    const size_t count = c.bytes / sizeof(T);
    const size_t stride = static_cast<size_t>(blocks_per_copy) * blockDim.x;
    for (size_t i = static_cast<size_t>(part) * blockDim.x + threadIdx.x; i < count; i += stride)
        dst[i] = scale ? Scaler<T>::apply(src[i], factor, divisor) : src[i];
}

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

unsigned blocks_for(size_t count) {
    size_t b = (count + kThreads - 1) / kThreads;
    if (b == 0) b = 1;
    return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

template <class T>
cudaError_t scale_typed(void *dst, const void *src, size_t count, double factor,
                        cudaStream_t stream) {
    cudaGetLastError();  // an earlier call's error is not this launch's
    scale_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<T *>(dst), static_cast<const T *>(src), count, factor,
        reduce::integer_divisor(factor));
    return cudaGetLastError();
}

template <class T>
cudaError_t copy_batch_typed(const hvd_gpu_copy_t *copies, size_t n, double factor,
                             cudaStream_t stream) {
    CopyBatch batch{};
    size_t largest = 0;
    for (size_t i = 0; i < n; ++i) {
        batch.copies[i] = copies[i];
        if (copies[i].bytes / sizeof(T) > largest) largest = copies[i].bytes / sizeof(T);
    }
    batch.n = static_cast<uint32_t>(n);
    size_t per_copy = blocks_for(largest);
    if (per_copy * n > kMaxBlocks) per_copy = kMaxBlocks / n > 0 ? kMaxBlocks / n : 1;
    cudaGetLastError();  // an earlier call's error is not this launch's
    copy_batch_kernel<T><<<static_cast<unsigned>(per_copy * n), kThreads, 0, stream>>>(
        batch, factor, reduce::integer_divisor(factor), factor != 1.0);
    return cudaGetLastError();
}

// Calls F<T>(args...) with T the dtype's element type.
template <template <class> class F, class... A>
cudaError_t by_dtype(int32_t dtype, A... args) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return F<uint8_t>::run(args...);
        case HVD_DTYPE_INT8:
            return F<int8_t>::run(args...);
        case HVD_DTYPE_UINT16:
            return F<uint16_t>::run(args...);
        case HVD_DTYPE_INT16:
            return F<int16_t>::run(args...);
        case HVD_DTYPE_INT32:
            return F<int32_t>::run(args...);
        case HVD_DTYPE_INT64:
            return F<int64_t>::run(args...);
        case HVD_DTYPE_FLOAT16:
            return F<__half>::run(args...);
        case HVD_DTYPE_FLOAT32:
            return F<float>::run(args...);
        case HVD_DTYPE_FLOAT64:
            return F<double>::run(args...);
        case HVD_DTYPE_BOOL:
            return F<Bool>::run(args...);
        case HVD_DTYPE_BFLOAT16:
            return F<__nv_bfloat16>::run(args...);
        default:
            return cudaErrorInvalidValue;
    }
}

template <class T>
struct ScaleRun {
    static cudaError_t run(void *dst, const void *src, size_t count, double factor,
                           cudaStream_t s) {
        return scale_typed<T>(dst, src, count, factor, s);
    }
};
template <class T>
struct CopyRun {
    static cudaError_t run(const hvd_gpu_copy_t *copies, size_t n, double factor, cudaStream_t s) {
        return copy_batch_typed<T>(copies, n, factor, s);
    }
};

}  // namespace

cudaError_t launch_scale(void *dst, const void *src, size_t count, int32_t dtype, double factor,
                         cudaStream_t stream) {
    if (count == 0) return cudaSuccess;
    return by_dtype<ScaleRun>(dtype, dst, src, count, factor, stream);
}

cudaError_t launch_copy_batch(const hvd_gpu_copy_t *copies, size_t n, int32_t dtype, double factor,
                              cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (n > HVD_GPU_COPY_BATCH) return cudaErrorInvalidValue;
    return by_dtype<CopyRun>(dtype, copies, n, factor, stream);
}

}  // namespace hvd::gpu_module
