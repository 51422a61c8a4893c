// SPDX-License-Identifier: Apache-2.0
// A reduction whose result is scaled as it is stored: Average and postscale folded into the
// last step of a reduction, so the scaling needs no pass of its own over the output.
#include <cstring>

#include "common/dtype.h"
#include "reduce/reduce.h"

namespace hvd::reduce {
namespace {

// Elements of one block: its result is reduced, scaled and copied while it stays in L1 (a
// 4 KiB tensor is a single block).
constexpr size_t kBlockBytes = 4096;

}  // namespace

hvd_status_t reduce_into_scaled(void *dst, void *copy, const void *a, const void *b, size_t count,
                                int32_t dtype, int32_t op, double factor) {
    if (factor == 1.0) {
        return copy != nullptr ? reduce_into_twice(dst, copy, a, b, count, dtype, op)
                               : reduce_into(dst, a, b, count, dtype, op);
    }
    const size_t esz = dtype_size(dtype);
    if (esz == 0 || !op_supported(op)) return HVD_ERR_UNSUPPORTED;
    char *out = static_cast<char *>(dst);
    char *dup = static_cast<char *>(copy);
    const char *x = static_cast<const char *>(a);
    const char *y = static_cast<const char *>(b);
    const size_t block = kBlockBytes / esz;
    // Block by block, each read whole before it is written: dst and copy may be a or b.
    for (size_t start = 0; start < count; start += block) {
        const size_t len = count - start < block ? count - start : block;
        const size_t at = start * esz;
        hvd_status_t s = reduce_into(out + at, x + at, y + at, len, dtype, op);
        if (s == HVD_OK) s = scale_into(out + at, out + at, len, dtype, factor);
        if (s != HVD_OK) return s;
        if (dup != nullptr) std::memcpy(dup + at, out + at, len * esz);
    }
    return HVD_OK;
}

}  // namespace hvd::reduce
