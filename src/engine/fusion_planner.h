// Tensor fusion, decided by the coordinator: in one batch of responses (in emission order),
// runs of allreduces that can share one collective are chained with fuse_next, up to the
// fusion threshold in bytes. Deciding it once, centrally, means every rank fuses identically
// whatever its own settings, and a run never spans another set's response, so ranks that
// belong to several sets see the same runs.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/op_meta.h"

namespace hvd::engine {

// Sets fuse_next on responses that may run together with the one after them.
void plan_fusion(std::vector<Response> &batch, size_t threshold_bytes);

// Bytes of an allreduce response's tensor.
size_t response_bytes(const Response &r);

}  // namespace hvd::engine
