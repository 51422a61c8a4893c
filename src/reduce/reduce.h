// SPDX-License-Identifier: Apache-2.0
// Typed elementwise reduction kernels and Horovod's scaling, for every public dtype.
// Pure functions over plain memory: no allocation, no locks, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hvd/hvd.h"

namespace hvd::reduce {

// True for the ops these kernels implement: HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX,
// HVD_OP_PRODUCT. (Average is Sum followed by a scale; Adasum has its own algorithm.)
bool op_supported(int32_t op);

// dst[i] = dst[i] (op) src[i] for count elements of dtype. dst and src must not overlap
// unless equal. float16/bfloat16 are computed in float32 and rounded to nearest even.
// bool: Sum/Max = logical or, Min/Product = logical and (inputs nonzero count as true,
// outputs are 0 or 1). Integer Sum/Product wrap (two's complement), as C unsigned math.
// Floating Min/Max return NaN if either input is NaN (like torch.minimum); which NaN, and
// which zero for min(-0, +0), is unspecified. Pointers must be aligned to the element size.
// Returns HVD_ERR_UNSUPPORTED for an unknown dtype or op, else HVD_OK; count 0 touches no
// memory (null pointers are fine).
hvd_status_t reduce_inplace(void *dst, const void *src, size_t count, int32_t dtype, int32_t op);

// dst[i] = a[i] (op) b[i]; dst may equal a or b.
hvd_status_t reduce_into(void *dst, const void *a, const void *b, size_t count, int32_t dtype,
                         int32_t op);

// dst[i] = copy[i] = a[i] (op) b[i] in one pass over the inputs: the same bits as reduce_into
// followed by a copy of dst to copy. dst and copy must not overlap each other; each may equal
// a or b, or overlap neither.
hvd_status_t reduce_into_twice(void *dst, void *copy, const void *a, const void *b, size_t count,
                               int32_t dtype, int32_t op);

// The final store of a scaled reduction (Average, postscale): reduce_into, or with `copy`
// reduce_into_twice, with every stored element then scaled as scale_into scales it, a block at
// a time while the block is in cache: the same bits as those calls followed by scale_into on
// dst (and copy), without a second pass over memory. Aliasing as reduce_into_twice allows;
// factor 1.0 is exactly reduce_into / reduce_into_twice.
hvd_status_t reduce_into_scaled(void *dst, void *copy, const void *a, const void *b, size_t count,
                                int32_t dtype, int32_t op, double factor);

// dst[i] = src[i] * factor with Horovod's semantics: integers computed in float64 and
// truncated toward zero (then converted to the integer type, saturating at its range), and
// divided by n where factor is exactly 1/n (integer_divisor.h: an Average's exact quotient);
// float16/bfloat16 in float32; float32 in float32 (factor rounded to float); float64 in
// float64; bool is left unchanged unless factor is 0 (then false). dst may equal src.
// factor == 1.0 copies (or does nothing in place). For integers an infinite factor
// saturates and a NaN product gives 0. HVD_ERR_UNSUPPORTED for an unknown dtype.
hvd_status_t scale_into(void *dst, const void *src, size_t count, int32_t dtype, double factor);

}  // namespace hvd::reduce
