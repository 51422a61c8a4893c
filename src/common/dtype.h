// SPDX-License-Identifier: Apache-2.0
// Properties of the public dtypes (hvd_dtype_t values travel as int32_t).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hvd/hvd.h"

namespace hvd {

constexpr int32_t kNumDtypes = HVD_DTYPE_BFLOAT16 + 1;

inline bool dtype_valid(int32_t dtype) {
    return dtype >= 0 && dtype < kNumDtypes;
}

// Bytes per element; 0 for an invalid dtype.
size_t dtype_size(int32_t dtype);

// "float32", "bfloat16", ...; "invalid" for an unknown value.
const char *dtype_name(int32_t dtype);

// "sum", "average", ...; "invalid" for an unknown value.
const char *reduce_op_name(int32_t op);

}  // namespace hvd
