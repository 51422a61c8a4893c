// SPDX-License-Identifier: Apache-2.0
// Broadcast of a job that spans hosts. Up to broadcast_tree_max_bytes(), or where some host
// runs a single rank, by leaders: the root sends to one rank of every other host (its first)
// by the flat broadcast among those leaders, then each host's leader broadcasts through the
// host's shared memory; a message crosses the network once per host. Above it, in shares (L:
// the fewest ranks any host runs): the root's host first receives the message through its
// shared memory; then the holder of share i (1/L of the message; Hierarchy::local_share) on
// the root's host broadcasts it to the holders of share i on every other host, all at once
// (one flow per holder); then every other host gathers the shares through its shared memory.
#include "collectives/collectives.h"
#include "collectives/hierarchy.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "hierarchical broadcast";

hvd_status_t by_leaders(Comm &comm, const Hierarchy &h, char *buf, size_t bytes, int32_t root_host,
                        int32_t root_local) {
    std::vector<int32_t> leaders;
    for (size_t hh = 0; hh < h.hosts.size(); ++hh)
        leaders.push_back(h.hosts[hh][static_cast<int32_t>(hh) == root_host ? root_local : 0]);
    const int32_t leader = h.host_index == root_host ? root_local : 0;
    Comm local = h.local_comm(comm);
    hvd_status_t st = HVD_OK;
    if (h.local_index == leader) {
        Comm cross = Hierarchy::sub_comm(comm, leaders, h.host_index, nullptr);
        st = broadcast(cross, buf, bytes, root_host);
    }
    if (st == HVD_OK) st = broadcast(local, buf, bytes, leader);
    return st;
}

hvd_status_t in_shares(Comm &comm, const Hierarchy &h, char *buf, size_t bytes, int32_t root_host,
                       int32_t root_local) {
    std::vector<size_t> cut_at, cut_len;
    cut_shares(bytes, h.min_local_size(), &cut_at, &cut_len);
    const size_t local_n = h.local_members.size();
    std::vector<size_t> share_at(local_n, bytes), share_len(local_n, 0);  // per local rank
    for (size_t i = 0; i < local_n; ++i)
        if (h.local_share[i] >= 0) {
            share_at[i] = cut_at[h.local_share[i]];
            share_len[i] = cut_len[h.local_share[i]];
        }
    const size_t li = static_cast<size_t>(h.local_index);
    Comm local = h.local_comm(comm);
    hvd_status_t st = HVD_OK;
    if (h.host_index == root_host) st = broadcast(local, buf, bytes, root_local);
    if (st == HVD_OK && share_len[li] > 0) {
        Comm cross = h.cross_comm(comm);
        st = broadcast(cross, buf + share_at[li], share_len[li], root_host);
    }
    if (st == HVD_OK && h.host_index != root_host)
        st = allgatherv(local, buf + share_at[li], buf, share_len);
    return st;
}

}  // namespace

hvd_status_t broadcast_hierarchical(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, kName);
    if (st == HVD_OK) st = check_hierarchy(comm, kName);
    if (st != HVD_OK || bytes == 0) return st;
    const Hierarchy &h = *comm.hierarchy;
    int32_t root_host = 0, root_local = 0;
    for (size_t hh = 0; hh < h.hosts.size(); ++hh)
        for (size_t i = 0; i < h.hosts[hh].size(); ++i)
            if (h.hosts[hh][i] == comm.members[root_index]) {
                root_host = static_cast<int32_t>(hh);
                root_local = static_cast<int32_t>(i);
            }
    char *b = static_cast<char *>(buf);
    if (h.min_local_size() < 2 || bytes <= broadcast_tree_max_bytes())
        return by_leaders(comm, h, b, bytes, root_host, root_local);
    return in_shares(comm, h, b, bytes, root_host, root_local);
}

}  // namespace hvd::collectives
