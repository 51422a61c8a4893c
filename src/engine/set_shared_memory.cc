// SPDX-License-Identifier: Apache-2.0
#include "engine/set_shared_memory.h"

#include <cstring>
#include <string>

#include "collectives/collectives.h"
#include "common/error.h"
#include "common/log.h"

namespace hvd::engine {

namespace {

// What the first member sends: whether it made a segment, its nonce and its name.
struct Offer {
    int32_t made;
    uint64_t nonce;
    char name[116];
};

// Every member's yes (1) or no (0) for each flag; the result is 1 only where all said yes.
hvd_status_t all_agree(collectives::Comm &comm, int32_t *flags, size_t n) {
    return collectives::allreduce(comm, flags, n, HVD_DTYPE_INT32, HVD_OP_MIN);
}

}  // namespace

hvd_status_t set_up_set_shared_memory(collectives::Comm &comm, bool wanted,
                                      std::unique_ptr<shm::Group> *group) {
    const int32_t rank = comm.global_rank();
    std::string problem;
    Offer offer;
    std::memset(&offer, 0, sizeof offer);  // padding too: the bytes go to other processes
    if (comm.my_index == 0 && wanted) {
        try {
            *group = shm::Group::create(comm.size(), 0, shm::Settings::from_env());
            if ((*group)->name().size() < sizeof offer.name) {
                offer.made = 1;
                offer.nonce = (*group)->nonce();
                std::memcpy(offer.name, (*group)->name().c_str(), (*group)->name().size());
            } else {
                problem = "segment name too long";
            }
        } catch (const std::exception &e) {
            problem = e.what();
        }
    }
    hvd_status_t st = collectives::broadcast(comm, &offer, sizeof offer, 0);
    if (st != HVD_OK) return st;
    if (comm.my_index != 0 && wanted) {
        if (offer.made == 0) {
            problem = "the set's first member has no segment to offer";
        } else {
            try {
                *group = shm::Group::open(
                    std::string(offer.name, strnlen(offer.name, sizeof offer.name)), offer.nonce,
                    comm.size(), comm.my_index);
            } catch (const std::exception &e) {
                problem = e.what();
            }
        }
    }
    int32_t mapped = *group != nullptr ? 1 : 0;
    st = all_agree(comm, &mapped, 1);
    if (st != HVD_OK) return st;
    if (*group != nullptr) {
        (*group)->unlink();  // every member that could has mapped it
        (*group)->map_peers();
    }
    if (mapped == 0) {
        if (!problem.empty())
            HVD_LOG(kWarning, rank,
                    "process set %u: no shared memory (%s): its collectives go "
                    "through the transport",
                    comm.set_id, problem.c_str());
        group->reset();
        return HVD_OK;
    }
    // As for the job's group: single copy needs every member able to read every other's
    // memory, mapped buffers also their file descriptors.
    int32_t flags[2];
    flags[0] = (*group)->probe_single_copy() ? 1 : 0;
    flags[1] = flags[0] != 0 && (*group)->probe_mapped() ? 1 : 0;
    st = all_agree(comm, flags, 2);
    if (st != HVD_OK) return st;
    (*group)->enable_single_copy(flags[0] != 0);
    (*group)->enable_mapped(flags[0] != 0 && flags[1] != 0);
    HVD_LOG(kDebug, rank, "process set %u: shared memory for its %d members (mapped buffers %s)",
            comm.set_id, comm.size(), (*group)->may_map() ? "on" : "off");
    return HVD_OK;
}

}  // namespace hvd::engine
