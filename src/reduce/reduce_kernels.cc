// SPDX-License-Identifier: Apache-2.0
// Elementwise reduction kernels: one functor per op, one loop template per aliasing pattern,
// and a dtype x op switch that picks the instantiation once per call (no per-element
// dispatch). The loops are written so that GCC/Clang vectorise them at -O3 without
// -ffast-math; tests/unit/vectorization.cmake fails the build's tests if they stop doing so
// (it finds the loops by the names reduce_typed, reduce_half, widen_block, narrow_block).
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "common/dtype.h"
#include "common/half.h"
#include "common/streams.h"
#include "reduce/reduce.h"

namespace hvd::reduce {
namespace {

// Integer arithmetic runs in an unsigned type at least as wide as unsigned int: signed
// overflow is undefined, and uint16 * uint16 would otherwise promote to signed int.
template <class T>
using WrapType = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

struct SumOp {
    template <class T>
    static T apply(T a, T b) {
        if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
        } else {
            return a + b;
        }
    }
};

struct ProductOp {
    template <class T>
    static T apply(T a, T b) {
        if constexpr (std::is_integral_v<T>) {
            return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
        } else {
            return a * b;
        }
    }
};

// Floating min/max propagate NaN (either operand NaN gives a NaN), like torch.minimum and
// NCCL. Written as compare-and-select so the loop maps to SIMD compares and blends.
struct MinOp {
    template <class T>
    static T apply(T a, T b) {
        if constexpr (std::is_floating_point_v<T>) {
            return (b < a || b != b) ? b : a;
        } else {
            return b < a ? b : a;
        }
    }
};

struct MaxOp {
    template <class T>
    static T apply(T a, T b) {
        if constexpr (std::is_floating_point_v<T>) {
            return (a < b || b != b) ? b : a;
        } else {
            return a < b ? b : a;
        }
    }
};

// bool is one byte; any nonzero byte is true, results are 0 or 1.
struct LogicalOrOp {
    static uint8_t apply(uint8_t a, uint8_t b) { return static_cast<uint8_t>((a != 0) | (b != 0)); }
};

struct LogicalAndOp {
    static uint8_t apply(uint8_t a, uint8_t b) { return static_cast<uint8_t>((a != 0) & (b != 0)); }
};

// Three loops, one per aliasing pattern, so each can promise the compiler (__restrict) that
// its output does not alias its other inputs; without that promise the loops are versioned
// at run time and dst == src falls back to the scalar loop.
template <class Op, class T>
void combine(T *__restrict out, const T *__restrict a, const T *__restrict b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        out[i] = Op::apply(a[i], b[i]);
}

template <class Op, class T>
void accumulate(T *__restrict acc, const T *__restrict x, size_t n) {
    for (size_t i = 0; i < n; ++i)
        acc[i] = Op::apply(acc[i], x[i]);
}

template <class Op, class T>
void self_combine(T *acc, size_t n) {
    for (size_t i = 0; i < n; ++i)
        acc[i] = Op::apply(acc[i], acc[i]);
}

// Arrays of kStreamMinBytes and more are walked as interleaved streams (common/streams.h).
// reduce_into_twice stores both outputs in one pass from here on, and below reduces and then
// copies: its two memcpy calls per block cost more than they save on short arrays (measured
// slower on a 128 KiB allreduce of 2 ranks and on the 256 x 4 KiB step).
constexpr size_t kTwiceMinBytes = 128 * 1024;

using KernelFn = void (*)(void *dst, const void *a, const void *b, size_t count);
using TwiceFn = void (*)(void *dst, void *copy, const void *a, const void *b, size_t count);

template <class Op, class T>
void reduce_typed(void *dst, const void *a, const void *b, size_t count) {
    T *out = static_cast<T *>(dst);
    const T *x = static_cast<const T *>(a);
    const T *y = static_cast<const T *>(b);
    if (out == y && out != x) std::swap(x, y);  // every op here is commutative
    const bool streams = count * sizeof(T) >= kStreamMinBytes;
    if (out != x) {
        if (streams)
            in_streams<T>(count,
                          [&](size_t at, size_t n) { combine<Op>(out + at, x + at, y + at, n); });
        else
            combine<Op>(out, x, y, count);
    } else if (out != y) {
        if (streams)
            in_streams<T>(count, [&](size_t at, size_t n) { accumulate<Op>(out + at, y + at, n); });
        else
            accumulate<Op>(out, y, count);
    } else {
        self_combine<Op>(out, count);
    }
}

// dst[i] = copy[i] = a[i] op b[i], a block at a time through a buffer on the stack, so that
// dst or copy may be a or b (each block is read whole before it is written). The buffer goes
// out with memcpy: its wide stores beat a vectorised loop here (slightly faster on 4-256 MiB
// allreduces of 2 ranks).
template <class Op, class T>
void combine_twice(T *dst, T *copy, const T *a, const T *b, size_t n) {
    constexpr size_t block = kStreamBlockBytes / sizeof(T);
    T tmp[block];
    for (size_t start = 0; start < n; start += block) {
        const size_t len = std::min(block, n - start);
        for (size_t i = 0; i < len; ++i)
            tmp[i] = Op::apply(a[start + i], b[start + i]);
        std::memcpy(dst + start, tmp, len * sizeof(T));
        std::memcpy(copy + start, tmp, len * sizeof(T));
    }
}

template <class Op, class T>
void reduce_typed_twice(void *dst, void *copy, const void *a, const void *b, size_t count) {
    T *out = static_cast<T *>(dst);
    T *dup = static_cast<T *>(copy);
    const T *x = static_cast<const T *>(a);
    const T *y = static_cast<const T *>(b);
    if (out == y && out != x) std::swap(x, y);  // the operand order reduce_typed uses
    if (count * sizeof(T) < kTwiceMinBytes) {
        reduce_typed<Op, T>(dst, a, b, count);
        std::memcpy(copy, dst, count * sizeof(T));
        return;
    }
    in_streams<T>(count, [&](size_t at, size_t n) {
        combine_twice<Op>(out + at, dup + at, x + at, y + at, n);
    });
}

// 16-bit floats: widen a block of each input to float, reduce in float, round back. The
// blocks live on the stack (3 KiB) and stay in L1; every loop vectorises.
constexpr size_t kHalfBlock = 256;

// narrow() leaves the 16-bit result in a 32-bit word; see narrow_block.
struct Fp16Codec {
    static float widen(uint16_t h) { return fp16_to_float(h); }
    static uint32_t narrow(float f) { return float_to_fp16_wide(f); }
};

struct Bf16Codec {
    static float widen(uint16_t h) { return bf16_to_float(h); }
    static uint32_t narrow(float f) { return float_to_bf16(f); }
};

template <class Codec>
void widen_block(const uint16_t *__restrict in, float *__restrict out, size_t n) {
    for (size_t i = 0; i < n; ++i)
        out[i] = Codec::widen(in[i]);
}

// Rounds in 32-bit lanes, then packs to 16 bits in a second pass: fused into one loop, GCC
// demotes the rounding's selects to 16-bit lanes and the shuffles halve the throughput.
template <class Codec>
void narrow_block(const float *__restrict in, uint16_t *__restrict out, size_t n) {
    uint32_t wide[kHalfBlock];
    for (size_t i = 0; i < n; ++i)
        wide[i] = Codec::narrow(in[i]);
    for (size_t i = 0; i < n; ++i)
        out[i] = static_cast<uint16_t>(wide[i]);
}

template <class Op, class Codec>
void reduce_half(void *dst, const void *a, const void *b, size_t count) {
    uint16_t *out = static_cast<uint16_t *>(dst);
    const uint16_t *x = static_cast<const uint16_t *>(a);
    const uint16_t *y = static_cast<const uint16_t *>(b);
    float fx[kHalfBlock];
    float fy[kHalfBlock];
    // Both inputs of a block are widened before its output is written, so out may be x or y.
    for (size_t start = 0; start < count; start += kHalfBlock) {
        size_t len = std::min(kHalfBlock, count - start);
        widen_block<Codec>(x + start, fx, len);
        widen_block<Codec>(y + start, fy, len);
        accumulate<Op>(fx, fy, len);
        narrow_block<Codec>(fx, out + start, len);
    }
}

// A dtype x op's kernels: `twice` is null where the result is stored twice by `once` and a
// copy (16-bit floats, whose blocks already go through float buffers).
struct Kernels {
    KernelFn once = nullptr;
    TwiceFn twice = nullptr;
};

template <class Op, class T>
constexpr Kernels typed() {
    return {reduce_typed<Op, T>, reduce_typed_twice<Op, T>};
}

template <class Op>
Kernels numeric_kernels(int32_t dtype) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return typed<Op, uint8_t>();
        case HVD_DTYPE_INT8:
            return typed<Op, int8_t>();
        case HVD_DTYPE_UINT16:
            return typed<Op, uint16_t>();
        case HVD_DTYPE_INT16:
            return typed<Op, int16_t>();
        case HVD_DTYPE_INT32:
            return typed<Op, int32_t>();
        case HVD_DTYPE_INT64:
            return typed<Op, int64_t>();
        case HVD_DTYPE_FLOAT16:
            return {reduce_half<Op, Fp16Codec>, nullptr};
        case HVD_DTYPE_BFLOAT16:
            return {reduce_half<Op, Bf16Codec>, nullptr};
        case HVD_DTYPE_FLOAT32:
            return typed<Op, float>();
        case HVD_DTYPE_FLOAT64:
            return typed<Op, double>();
        default:
            return {};
    }
}

Kernels bool_kernels(int32_t op) {
    switch (op) {
        case HVD_OP_SUM:
        case HVD_OP_MAX:
            return typed<LogicalOrOp, uint8_t>();
        case HVD_OP_MIN:
        case HVD_OP_PRODUCT:
            return typed<LogicalAndOp, uint8_t>();
        default:
            return {};
    }
}

Kernels select_kernels(int32_t dtype, int32_t op) {
    if (dtype == HVD_DTYPE_BOOL) return bool_kernels(op);
    switch (op) {
        case HVD_OP_SUM:
            return numeric_kernels<SumOp>(dtype);
        case HVD_OP_MIN:
            return numeric_kernels<MinOp>(dtype);
        case HVD_OP_MAX:
            return numeric_kernels<MaxOp>(dtype);
        case HVD_OP_PRODUCT:
            return numeric_kernels<ProductOp>(dtype);
        default:
            return {};
    }
}

}  // namespace

bool op_supported(int32_t op) {
    return op == HVD_OP_SUM || op == HVD_OP_MIN || op == HVD_OP_MAX || op == HVD_OP_PRODUCT;
}

hvd_status_t reduce_into(void *dst, const void *a, const void *b, size_t count, int32_t dtype,
                         int32_t op) {
    KernelFn kernel = select_kernels(dtype, op).once;
    if (kernel == nullptr) return HVD_ERR_UNSUPPORTED;
    if (count > 0) kernel(dst, a, b, count);
    return HVD_OK;
}

hvd_status_t reduce_into_twice(void *dst, void *copy, const void *a, const void *b, size_t count,
                               int32_t dtype, int32_t op) {
    Kernels k = select_kernels(dtype, op);
    if (k.once == nullptr) return HVD_ERR_UNSUPPORTED;
    if (count == 0) return HVD_OK;
    if (k.twice != nullptr) {
        k.twice(dst, copy, a, b, count);
    } else {
        k.once(dst, a, b, count);
        std::memcpy(copy, dst, count * dtype_size(dtype));
    }
    return HVD_OK;
}

hvd_status_t reduce_inplace(void *dst, const void *src, size_t count, int32_t dtype, int32_t op) {
    return reduce_into(dst, dst, src, count, dtype, op);
}

}  // namespace hvd::reduce
