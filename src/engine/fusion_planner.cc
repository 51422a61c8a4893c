#include "engine/fusion_planner.h"

#include "common/dtype.h"
#include "hvd/hvd.h"

namespace hvd::engine {

namespace {

// A tensor above this runs alone, in place: copying it into and out of the fusion buffer costs
// more (hundreds of microseconds per MiB) than the extra collective's latency saves.
constexpr size_t kLoneTensorBytes = size_t{1} << 20;

bool fusable(const Response &r) {
    if (r.status != HVD_OK || r.addressee >= 0) return false;
    // Adasum combines each tensor as its own vector: fusing would change the result.
    if (r.type == OpType::kAllreduce) return r.reduce_op != HVD_OP_ADASUM;
    return r.type == OpType::kAllgather || r.type == OpType::kReducescatter;
}

bool compatible(const Response &a, const Response &b) {
    if (!fusable(a) || !fusable(b) || a.type != b.type || a.group != b.group ||
        a.set_id != b.set_id || a.dtype != b.dtype)
        return false;
    if (a.type == OpType::kAllgather) return true;  // bytes are concatenated, never combined
    return a.reduce_op == b.reduce_op && a.prescale == b.prescale && a.postscale == b.postscale;
}

}  // namespace

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

void plan_fusion(std::vector<Response> &batch, size_t threshold_bytes) {
    size_t run_bytes = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
        batch[i].fuse_next = false;
        size_t mine = response_bytes(batch[i]);
        if (i == 0 || !batch[i - 1].fuse_next) run_bytes = mine;
        if (i + 1 == batch.size() || !compatible(batch[i], batch[i + 1])) continue;
        size_t next = response_bytes(batch[i + 1]);
        if (run_bytes + next > threshold_bytes) continue;
        if (mine > kLoneTensorBytes || next > kLoneTensorBytes) continue;
        batch[i].fuse_next = true;
        run_bytes += next;
    }
}

}  // namespace hvd::engine
