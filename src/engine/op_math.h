// SPDX-License-Identifier: Apache-2.0
// The arithmetic every executor of an op shares (host and GPU): the reduction an op runs, its
// final scaling, a tensor's row size (elements and bytes) and Horovod's split of rows in a
// reducescatter.
//
// The sizes computed here (rows, bytes, sums over members) need no overflow checks: each
// tensor's shape was checked at enqueue, and what comes from several ranks (an allgather's
// first dimensions, an alltoall's split matrix) by the coordinator (check_sizes), so every
// product and sum of them fits in int64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "engine/request.h"

namespace hvd::engine {

// The reduction the collective runs: Average is a Sum, scaled afterwards (postscale_of).
inline int32_t reduction_of(const Request &req) {
    return req.meta.reduce_op == HVD_OP_AVERAGE ? HVD_OP_SUM : req.meta.reduce_op;
}

// Average divides by the set size as part of the postscale factor (one rounding step).
inline double postscale_of(const Request &req, int32_t set_size) {
    double post = req.meta.postscale;
    if (req.meta.reduce_op == HVD_OP_AVERAGE) post /= set_size;
    return post;
}

// Elements of one row: the product of every dimension but the first.
inline size_t row_elements_of(const TensorRef &t) {
    size_t row = 1;
    for (size_t i = 1; i < t.shape.size(); ++i)
        row *= static_cast<size_t>(t.shape[i]);
    return row;
}

// Bytes of one row: everything but the first dimension.
inline size_t row_bytes_of(const TensorRef &t) {
    return dtype_size(t.dtype) * row_elements_of(t);
}

// Rows of a first dimension d0 that member r of n gets in a reducescatter (Horovod's split).
inline int64_t scatter_rows(int64_t d0, int64_t n, int64_t r) {
    return d0 / n + (r < d0 % n ? 1 : 0);
}

}  // namespace hvd::engine
