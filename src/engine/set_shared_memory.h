// SPDX-License-Identifier: Apache-2.0
// Shared memory for a process set whose members all share a host: its own segment, set up by
// its members right after the set is created (every member runs the creation at the same
// point of the agreed order), so that the set's collectives go through shared memory as the
// whole job's do. The set's first member creates the segment and sends its name through the
// set (a broadcast over the transport), every member maps it, and they agree (an allreduce)
// that all of them did; those that may read and map each other's memory turn single copy and
// mapped buffers on, as the job's group does. Any member that cannot map it keeps the whole
// set on the transport: every member makes the same choice.
#pragma once

#include <memory>

#include "collectives/comm.h"
#include "shm/shm_group.h"

namespace hvd::engine {

// comm: the new set's view over the transport (shm null; seq unused by any other op of the
// set yet; its deadline bounds the set-up). wanted: this member's HVD_SHM (a member without it
// keeps the whole set on the transport). Blocking, engine thread. Returns HVD_OK with *group
// set, or left null where the set stays on the transport (logged), or the transport's failure
// (the set-up could not finish: the context must abort, as after a failed collective).
hvd_status_t set_up_set_shared_memory(collectives::Comm &comm, bool wanted,
                                      std::unique_ptr<shm::Group> *group);

}  // namespace hvd::engine
