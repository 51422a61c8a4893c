// SPDX-License-Identifier: Apache-2.0
// Element i of an array of any hvd dtype as a double, and back: integers saturated and
// truncated toward zero, bool 0 or 1, float16/bfloat16 rounded from float (the rules of the
// GPU module's kernels). For the GPU tests and their fake device.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/half.h"

namespace dtype_elements {

template <class T>
T read_as(const void *p, size_t i) {
    return static_cast<const T *>(p)[i];
}

inline double load(int32_t dtype, const void *p, size_t i) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
        case HVD_DTYPE_BOOL:
            return read_as<uint8_t>(p, i);
        case HVD_DTYPE_INT8:
            return read_as<int8_t>(p, i);
        case HVD_DTYPE_UINT16:
            return read_as<uint16_t>(p, i);
        case HVD_DTYPE_INT16:
            return read_as<int16_t>(p, i);
        case HVD_DTYPE_INT32:
            return read_as<int32_t>(p, i);
        case HVD_DTYPE_INT64:
            return static_cast<double>(read_as<int64_t>(p, i));
        case HVD_DTYPE_FLOAT16:
            return hvd::fp16_to_float(read_as<uint16_t>(p, i));
        case HVD_DTYPE_BFLOAT16:
            return hvd::bf16_to_float(read_as<uint16_t>(p, i));
        case HVD_DTYPE_FLOAT32:
            return read_as<float>(p, i);
        default:
            return read_as<double>(p, i);
    }
}

template <class T>
void store_int(void *p, size_t i, double v, double lo, double hi) {
    v = v != v ? 0 : v < lo ? lo : v > hi ? hi : std::trunc(v);
    static_cast<T *>(p)[i] = static_cast<T>(v);
}

inline void store(int32_t dtype, void *p, size_t i, double v) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
            return store_int<uint8_t>(p, i, v, 0, 255);
        case HVD_DTYPE_BOOL:
            static_cast<uint8_t *>(p)[i] = v != 0;
            return;
        case HVD_DTYPE_INT8:
            return store_int<int8_t>(p, i, v, -128, 127);
        case HVD_DTYPE_UINT16:
            return store_int<uint16_t>(p, i, v, 0, 65535);
        case HVD_DTYPE_INT16:
            return store_int<int16_t>(p, i, v, -32768, 32767);
        case HVD_DTYPE_INT32:
            return store_int<int32_t>(p, i, v, -2147483648.0, 2147483647.0);
        case HVD_DTYPE_INT64:
            static_cast<int64_t *>(p)[i] = static_cast<int64_t>(std::trunc(v));
            return;
        case HVD_DTYPE_FLOAT16:
            static_cast<uint16_t *>(p)[i] = hvd::float_to_fp16(static_cast<float>(v));
            return;
        case HVD_DTYPE_BFLOAT16:
            static_cast<uint16_t *>(p)[i] = hvd::float_to_bf16(static_cast<float>(v));
            return;
        case HVD_DTYPE_FLOAT32:
            static_cast<float *>(p)[i] = static_cast<float>(v);
            return;
        default:
            static_cast<double *>(p)[i] = v;
    }
}

}  // namespace dtype_elements
