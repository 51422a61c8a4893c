// SPDX-License-Identifier: Apache-2.0
// ncclCommAbort without letting it hold the engine thread. NCCL's abort waits for the device
// work queued on the communicator's stream, which may sit behind a kernel of another
// communicator that waits for a dead peer (NVIDIA/nccl issues 564 and 829): that kernel ends
// only once its own communicator is aborted. Each abort therefore runs on a helper thread of
// its own, all at once, so that no abort waits for another; the caller waits for them up to a
// limit, past which it goes on (with a warning naming the rank and how many are left) and the
// helpers finish on their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "gpu/gpu_module_api.h"

namespace hvd::gpu {

// How long the engine thread waits for a batch of aborts.
constexpr std::chrono::milliseconds kAbortWait{5000};

// Aborts each communicator in `comms` (once each, concurrently; a failure is logged and does
// not stop the others) through api->nccl_comm_abort, one helper thread per communicator, and
// waits for them up to `limit`. True when all were done within it; false when some helper
// still runs (it then finishes alone: `api` must outlive it, as the process's module table
// does). Where no thread can be started, that abort runs on the calling thread, unbounded.
// Never throws; any thread. An empty `comms` returns true at once, starting nothing.
bool abort_within(const hvd_gpu_module_t *api, const std::vector<void *> &comms,
                  std::chrono::milliseconds limit, int32_t rank);

}  // namespace hvd::gpu
