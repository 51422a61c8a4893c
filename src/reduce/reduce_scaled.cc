// SPDX-License-Identifier: Apache-2.0
// A reduction whose result is scaled as it is stored: Average and postscale folded into the
// last step of a reduction, so the scaling needs no pass of its own over the output. A float32
// or float64 sum is scaled in the same loop (the bits of a sum rounded to T, then multiplied by
// the factor rounded to T, as scale_into does); every other dtype and op is reduced and scaled a
// block at a time while the block is in cache.
#include <cstring>
#include <utility>

#include "common/dtype.h"
#include "reduce/reduce.h"

namespace hvd::reduce {
namespace {

// Bytes of one block: its result is reduced, scaled and copied while it stays in L1 (a 4 KiB
// tensor is a single block).
constexpr size_t kBlockBytes = 4096;

// One loop per aliasing pattern, as the reduction kernels: __restrict lets GCC vectorise each
// without run-time overlap checks.
template <class T>
void sum_scaled(T *__restrict out, const T *__restrict a, const T *__restrict b, size_t n,
                T factor) {
    for (size_t i = 0; i < n; ++i)
        out[i] = (a[i] + b[i]) * factor;
}

template <class T>
void add_scaled(T *__restrict acc, const T *__restrict x, size_t n, T factor) {
    for (size_t i = 0; i < n; ++i)
        acc[i] = (acc[i] + x[i]) * factor;
}

// dst = (a + b) * factor over one block; dst may be a or b.
template <class T>
void sum_scaled_block(T *dst, const T *a, const T *b, size_t n, T factor) {
    if (dst == b && dst != a) std::swap(a, b);
    if (dst != a)
        sum_scaled(dst, a, b, n, factor);
    else if (dst != b)
        add_scaled(dst, b, n, factor);
    else
        for (size_t i = 0; i < n; ++i)
            dst[i] = (dst[i] + dst[i]) * factor;
}

// Block by block, each read whole before it is written: dst and copy may be a or b.
template <class Block>
void by_blocks(char *dst, char *copy, const char *a, const char *b, size_t count, size_t esz,
               Block &&block) {
    const size_t per_block = kBlockBytes / esz;
    for (size_t start = 0; start < count; start += per_block) {
        const size_t len = count - start < per_block ? count - start : per_block;
        const size_t at = start * esz;
        block(dst + at, a + at, b + at, len);
        if (copy != nullptr) std::memcpy(copy + at, dst + at, len * esz);
    }
}

template <class T>
void sum_scaled_any(char *dst, char *copy, const char *a, const char *b, size_t count,
                    double factor) {
    const T f = static_cast<T>(factor);
    by_blocks(dst, copy, a, b, count, sizeof(T),
              [f](char *out, const char *x, const char *y, size_t n) {
                  sum_scaled_block(reinterpret_cast<T *>(out), reinterpret_cast<const T *>(x),
                                   reinterpret_cast<const T *>(y), n, f);
              });
}

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
    if (op == HVD_OP_SUM && dtype == HVD_DTYPE_FLOAT32) {
        sum_scaled_any<float>(out, dup, x, y, count, factor);
        return HVD_OK;
    }
    if (op == HVD_OP_SUM && dtype == HVD_DTYPE_FLOAT64) {
        sum_scaled_any<double>(out, dup, x, y, count, factor);
        return HVD_OK;
    }
    hvd_status_t s = HVD_OK;
    by_blocks(out, dup, x, y, count, esz, [&](char *o, const char *p, const char *q, size_t n) {
        if (s == HVD_OK) s = reduce_into(o, p, q, n, dtype, op);
        if (s == HVD_OK) s = scale_into(o, o, n, dtype, factor);
    });
    return s;
}

}  // namespace hvd::reduce
