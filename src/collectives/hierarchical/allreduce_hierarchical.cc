// SPDX-License-Identifier: Apache-2.0
// Allreduce of a job that spans hosts, in three steps:
//  1. the buffer is cut into as many shares as a host has ranks; within each host, through
//     its shared-memory group, the host's ranks reduce-scatter the buffer: local rank i ends
//     with the host's sum of share i, in place, and nothing else is copied;
//  2. local rank i allreduces share i across hosts with the ranks of local rank i (ring or
//     recursive doubling over the transport), so every rank of a host moves 1/L of the bytes
//     across the network, all at once (one flow per local rank: every core and NIC works);
//  3. within each host the ranks gather the shares through shared memory.
// Each element is reduced across hosts by one cross group, whose members end with identical
// bits, and step 3 copies those bits to the host: every rank ends with identical results.
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
    std::vector<size_t> share_at, share_counts;
    cut_shares(count, h.local_members.size(), &share_at, &share_counts);
    std::vector<size_t> share_bytes(share_counts.size());
    for (size_t i = 0; i < share_counts.size(); ++i)
        share_bytes[i] = share_counts[i] * esize;
    char *mine = static_cast<char *>(buf) + share_at[h.local_index] * esize;
    st = reducescatter_shm(local, buf, mine, share_counts, dtype, op);
    if (st == HVD_OK) st = allreduce(cross, mine, share_counts[h.local_index], dtype, op);
    if (st == HVD_OK) st = allgatherv(local, mine, buf, share_bytes);
    return st;
}

}  // namespace hvd::collectives
