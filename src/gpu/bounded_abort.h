// SPDX-License-Identifier: Apache-2.0
// ncclCommAbort without letting it hold the engine thread. NCCL's abort can block while a
// kernel of another communicator still runs on the device (NVIDIA/nccl issues 564 and 829),
// and the engine thread calls it exactly when something already went wrong. The aborts run on
// a helper thread that the caller waits for up to a limit; past it the caller goes on (with a
// warning naming the rank and how many are left) and the helper finishes them on its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "gpu/gpu_module_api.h"

namespace hvd::gpu {

// How long the engine thread waits for a batch of aborts.
constexpr std::chrono::milliseconds kAbortWait{5000};

// Aborts each communicator in `comms` (in order, once each; a failure is logged and the next
// one still aborted) through api->nccl_comm_abort on a helper thread, and waits for them up
// to `limit`. True when all were done within it; false when the helper still runs (it then
// finishes alone: `api` must outlive it, as the process's module table does). Never throws;
// any thread. An empty `comms` returns true at once, starting nothing.
bool abort_within(const hvd_gpu_module_t *api, const std::vector<void *> &comms,
                  std::chrono::milliseconds limit, int32_t rank);

}  // namespace hvd::gpu
