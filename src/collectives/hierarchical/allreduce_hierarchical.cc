// SPDX-License-Identifier: Apache-2.0
// Allreduce of a job that spans hosts, in three steps (L: the fewest ranks any host runs):
//  1. the buffer is cut into L shares; within each host, through its shared-memory group,
//     the host's ranks reduce-scatter the buffer: the holder of share i (L local ranks hold
//     one each, Hierarchy::local_share) ends with the host's sum of share i, in place, and
//     nothing else is copied (the other local ranks, on hosts with more ranks than L,
//     contribute their data and receive no share; a host of one rank skips it);
//  2. the holder of share i allreduces it across hosts with the holders of share i on the
//     other hosts (ring or recursive doubling over the transport), so L ranks of every host
//     move 1/L of the bytes across the network, all at once (one flow each, spread over the
//     host's NICs and NUMA nodes: every core and NIC works);
//  3. within each host the ranks gather the shares through shared memory.
// Each element is reduced across hosts by one cross group, whose members end with identical
// bits, and step 3 copies those bits to the host: every rank ends with identical results.
// Any number of ranks per host and any placement of ranks on hosts.
#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "collectives/shm/shm_sync.h"
#include "common/dtype.h"

namespace hvd::collectives {

namespace {
constexpr const char *kName = "hierarchical allreduce";
}  // namespace

hvd_status_t allreduce_hierarchical(Comm &comm, void *buf, size_t count, int32_t dtype,
                                    int32_t op) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, kName);
    if (st == HVD_OK) st = check_hierarchy(comm, kName);
    if (st != HVD_OK) return st;
    const Hierarchy &h = *comm.hierarchy;
    Comm local = h.local_comm(comm);
    Comm cross = h.cross_comm(comm);
    const size_t esize = dtype_size(dtype);
    const size_t local_n = h.local_members.size();
    const size_t li = static_cast<size_t>(h.local_index);
    std::vector<size_t> share_at, share_counts;
    cut_shares(count, h.min_local_size(), &share_at, &share_counts);
    // Per local rank, in local order (the holders' shares lie in the buffer in that order).
    std::vector<size_t> counts(local_n, 0), bytes(local_n, 0);
    size_t my_at = 0;
    for (size_t i = 0; i < local_n; ++i) {
        if (h.local_share[i] >= 0) counts[i] = share_counts[h.local_share[i]];
        bytes[i] = counts[i] * esize;
        if (i < li) my_at += counts[i];
    }
    char *mine = static_cast<char *>(buf) + my_at * esize;
    if (local_n > 1) st = reducescatter_shm(local, buf, mine, counts, dtype, op);
    if (st == HVD_OK && h.my_share() >= 0) st = allreduce(cross, mine, counts[li], dtype, op);
    if (st == HVD_OK && local_n > 1) st = allgatherv(local, mine, buf, bytes);
    return st;
}

}  // namespace hvd::collectives
