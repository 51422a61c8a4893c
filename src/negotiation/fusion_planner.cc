// SPDX-License-Identifier: Apache-2.0
#include "negotiation/fusion_planner.h"

#include "common/dtype.h"
#include "hvd/hvd.h"

namespace hvd::negotiation {

namespace {

bool fusable(const Response &r) {
    if (r.status != HVD_OK || r.addressee >= 0) return false;
    // Adasum combines each tensor as its own vector: fusing would change the result.
    if (r.type == OpType::kAllreduce) return r.reduce_op != HVD_OP_ADASUM;
    return r.type == OpType::kAllgather || r.type == OpType::kReducescatter;
}

}  // namespace

bool fusable_together(const Response &a, const Response &b) {
    if (!fusable(a) || !fusable(b) || a.type != b.type || a.group != b.group ||
        a.set_id != b.set_id || a.dtype != b.dtype || a.device_type != b.device_type ||
        a.nccl != b.nccl || a.devices_key != b.devices_key)
        return false;
    if (a.type == OpType::kAllgather) return true;  // bytes are concatenated, never combined
    return a.reduce_op == b.reduce_op && a.prescale == b.prescale && a.postscale == b.postscale;
}

size_t response_bytes(const Response &r) {
    size_t n = dtype_size(r.dtype);
    for (size_t i = 0; i < r.shape.size(); ++i) {
        // An allgather's output has every member's rows.
        if (i == 0 && r.type == OpType::kAllgather) continue;
        n *= static_cast<size_t>(r.shape[i]);
    }
    if (r.type == OpType::kAllgather) {
        int64_t rows = 0;
        for (int64_t d : r.first_dims)
            rows += d;
        n *= static_cast<size_t>(rows);
    }
    return n;
}

}  // namespace hvd::negotiation
