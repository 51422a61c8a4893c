// SPDX-License-Identifier: Apache-2.0
// Horovod's prescale/postscale (and Average's 1/size): multiply a buffer by a double factor
// with per-dtype precision rules. Integers go through float64 and are truncated toward zero
// as Horovod's static_cast does, but saturate instead of overflowing (which is UB in C++); a
// factor that is exactly 1/n divides them by n (integer_divisor.h), so that an exact average
// stays exact.
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/dtype.h"
#include "common/half.h"
#include "reduce/integer_divisor.h"
#include "reduce/reduce.h"

namespace hvd::reduce {
namespace {

// Converts v to T, truncating toward zero and clamping to T's range; NaN (only possible with
// a NaN or infinite factor) becomes 0.
template <class T>
T saturate_from_double(double v) {
    using Limits = std::numeric_limits<T>;
    // T's minimum is 0 or -2^k and max + 1 is 2^k: both exact in double, unlike max itself
    // for int64 (2^63 - 1 rounds up to 2^63, and converting that back would be UB).
    constexpr double kLowest = static_cast<double>(Limits::min());
    constexpr double kPastMax = static_cast<double>(Limits::max() / 2 + 1) * 2.0;
    if (v != v) return 0;
    if (v >= kPastMax) return Limits::max();
    if (v <= kLowest) return Limits::min();
    return static_cast<T>(v);  // |v| fits: the conversion truncates toward zero
}

template <class T>
void scale_integers(void *dst, const void *src, size_t count, double factor) {
    T *out = static_cast<T *>(dst);
    const T *in = static_cast<const T *>(src);
    if (const double n = integer_divisor(factor); n != 0.0) {
        for (size_t i = 0; i < count; ++i)
            out[i] = saturate_from_double<T>(static_cast<double>(in[i]) / n);
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        out[i] = saturate_from_double<T>(static_cast<double>(in[i]) * factor);
    }
}

template <class T>
void scale_floats(void *dst, const void *src, size_t count, T factor) {
    T *out = static_cast<T *>(dst);
    const T *in = static_cast<const T *>(src);
    for (size_t i = 0; i < count; ++i)
        out[i] = in[i] * factor;
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void scale_half(void *dst, const void *src, size_t count, float factor) {
    uint16_t *out = static_cast<uint16_t *>(dst);
    const uint16_t *in = static_cast<const uint16_t *>(src);
    for (size_t i = 0; i < count; ++i)
        out[i] = Narrow(Widen(in[i]) * factor);
}

// Scaling a truth value only makes sense as "keep" or, for 0, "clear".
void scale_bool(void *dst, const void *src, size_t count, double factor) {
    if (factor == 0.0) {
        std::memset(dst, 0, count);
    } else if (dst != src) {
        std::memcpy(dst, src, count);
    }
}

void scale_any(void *dst, const void *src, size_t count, int32_t dtype, double factor) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return scale_integers<uint8_t>(dst, src, count, factor);
        case HVD_DTYPE_INT8:
            return scale_integers<int8_t>(dst, src, count, factor);
        case HVD_DTYPE_UINT16:
            return scale_integers<uint16_t>(dst, src, count, factor);
        case HVD_DTYPE_INT16:
            return scale_integers<int16_t>(dst, src, count, factor);
        case HVD_DTYPE_INT32:
            return scale_integers<int32_t>(dst, src, count, factor);
        case HVD_DTYPE_INT64:
            return scale_integers<int64_t>(dst, src, count, factor);
        case HVD_DTYPE_FLOAT16:
            return scale_half<fp16_to_float, float_to_fp16>(dst, src, count,
                                                            static_cast<float>(factor));
        case HVD_DTYPE_BFLOAT16:
            return scale_half<bf16_to_float, float_to_bf16>(dst, src, count,
                                                            static_cast<float>(factor));
        case HVD_DTYPE_FLOAT32:
            return scale_floats<float>(dst, src, count, static_cast<float>(factor));
        case HVD_DTYPE_FLOAT64:
            return scale_floats<double>(dst, src, count, factor);
        case HVD_DTYPE_BOOL:
            return scale_bool(dst, src, count, factor);
    }
}

}  // namespace

hvd_status_t scale_into(void *dst, const void *src, size_t count, int32_t dtype, double factor) {
    size_t elem_size = dtype_size(dtype);
    if (elem_size == 0) return HVD_ERR_UNSUPPORTED;
    if (count == 0) return HVD_OK;
    if (factor == 1.0) {
        if (dst != src) std::memcpy(dst, src, count * elem_size);
        return HVD_OK;
    }
    scale_any(dst, src, count, dtype, factor);
    return HVD_OK;
}

}  // namespace hvd::reduce
