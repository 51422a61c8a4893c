// SPDX-License-Identifier: Apache-2.0
// Tensor fusion, decided by the coordinator: in one batch of responses (in emission order),
// runs of allreduces that can share one collective are chained with fuse_next, up to the
// fusion threshold in bytes. Deciding it once, centrally, means every rank fuses identically
// whatever its own settings, and a run never spans another set's response, so ranks that
// belong to several sets see the same runs.
#pragma once

#include <cstddef>
#include <vector>

#include "negotiation/op_meta.h"

namespace hvd::negotiation {

// Bytes of an allreduce response's tensor.
size_t response_bytes(const Response &r);
// Whether b may run in one collective right after a (same kind, set, dtype and reduction).
bool fusable_together(const Response &a, const Response &b);
// A tensor above this runs alone, in place: copying it into and out of the fusion buffer costs
// more (hundreds of microseconds per MiB) than the extra collective's latency saves.
constexpr size_t kLoneTensorBytes = size_t{1} << 20;

// Sets fuse_next on responses [first, seq.size()) of a random-access sequence (a vector, or a
// deque the batch was appended to) that may run together with the one after them.
template <class Seq>
void plan_fusion(Seq &seq, size_t first, size_t threshold_bytes) {
    size_t run_bytes = 0;
    for (size_t i = first; i < seq.size(); ++i) {
        seq[i].fuse_next = false;
        size_t mine = response_bytes(seq[i]);
        if (i == first || !seq[i - 1].fuse_next) run_bytes = mine;
        if (i + 1 == seq.size() || !fusable_together(seq[i], seq[i + 1])) continue;
        size_t next = response_bytes(seq[i + 1]);
        if (run_bytes + next > threshold_bytes) continue;
        if (mine > kLoneTensorBytes || next > kLoneTensorBytes) continue;
        seq[i].fuse_next = true;
        run_bytes += next;
    }
}

// The same over a whole batch.
inline void plan_fusion(std::vector<Response> &batch, size_t threshold_bytes) {
    plan_fusion(batch, 0, threshold_bytes);
}

}  // namespace hvd::negotiation
