// SPDX-License-Identifier: Apache-2.0
// Ragged allgather of a job that spans hosts, in four steps (L: the fewest ranks any host
// runs; a host's block: its ranks' blocks in rank order):
//  1. within each host, through its shared-memory group, the host's ranks gather the host's
//     block;
//  2. every host's block is cut into L shares; local rank i (i < L) gathers share i of every
//     host's block with the ranks of local rank i on the other hosts (ring over the
//     transport), so the ranks of a host carry its bytes across the network at once, one flow
//     each;
//  3. within each host the ranks gather the shares that crossed through shared memory (local
//     ranks from L on, on hosts with more than L ranks, have none to give);
//  4. every rank puts each block in its place in the output, in rank order.
// Steps 2 and 3 work in staging memory in the order (share, host), so each step's output is
// one contiguous block per member; any ranks per host and any placement of ranks on hosts.
#include <algorithm>
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/hierarchy.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "hierarchical allgatherv";

// Copies bytes [from, from + len) of host block `ranks` (their blocks of `bytes` in order)
// from src into each rank's place in out (out_at: each rank's offset).
void place(const std::vector<int32_t> &ranks, const std::vector<size_t> &bytes,
           const std::vector<size_t> &out_at, size_t from, size_t len, const char *src, char *out) {
    size_t at = 0;  // the rank's block within the host block
    for (int32_t r : ranks) {
        const size_t lo = std::max(at, from), hi = std::min(at + bytes[r], from + len);
        if (lo < hi) std::memcpy(out + out_at[r] + (lo - at), src + (lo - from), hi - lo);
        at += bytes[r];
    }
}

}  // namespace

hvd_status_t allgatherv_hierarchical(Comm &comm, const void *in, void *out,
                                     const std::vector<size_t> &bytes) {
    hvd_status_t st = check_allgatherv_args(comm, in, out, bytes, kName);
    if (st != HVD_OK) return st;
    st = check_hierarchy(comm, kName);
    if (st != HVD_OK) return st;
    const Hierarchy &h = *comm.hierarchy;
    const size_t hosts = h.hosts.size(), shares = h.min_local_size();
    const size_t li = static_cast<size_t>(h.local_index);
    std::vector<size_t> out_at(bytes.size());
    size_t total = 0;
    for (size_t r = 0; r < bytes.size(); ++r) {
        out_at[r] = total;
        total += bytes[r];
    }
    if (total == 0) return HVD_OK;
    // share_at[hh][i], share_len[hh][i]: share i of host hh's block; staged at pos[hh][i].
    std::vector<std::vector<size_t>> share_at(hosts), share_len(hosts), pos(hosts);
    std::vector<size_t> share_total(h.local_members.size(), 0), share_start(share_total.size());
    for (size_t hh = 0; hh < hosts; ++hh) {
        size_t host_bytes = 0;
        for (int32_t r : h.hosts[hh])
            host_bytes += bytes[r];
        cut_shares(host_bytes, shares, &share_at[hh], &share_len[hh]);
        pos[hh].resize(shares);
        for (size_t i = 0; i < shares; ++i) {
            pos[hh][i] = share_total[i];
            share_total[i] += share_len[hh][i];
        }
    }
    for (size_t i = 0, at = 0; i < share_total.size(); at += share_total[i++])
        share_start[i] = at;
    std::vector<size_t> local_bytes;
    for (int32_t r : h.local_members)
        local_bytes.push_back(bytes[r]);
    const size_t mine = static_cast<size_t>(h.host_index);
    return comm.guarded(kName, [&] {
        const size_t host_bytes = share_at[mine].back() + share_len[mine].back();
        char *staged = static_cast<char *>(h.staging->get(total + host_bytes));
        char *host_block = staged + total;
        Comm local = h.local_comm(comm);
        hvd_status_t s = allgatherv(local, in, host_block, local_bytes);
        if (s == HVD_OK && li < shares) {
            Comm cross = h.cross_comm(comm);
            std::vector<size_t> cross_bytes(hosts);
            for (size_t hh = 0; hh < hosts; ++hh)
                cross_bytes[hh] = share_len[hh][li];
            s = allgatherv(cross, host_block + share_at[mine][li], staged + share_start[li],
                           cross_bytes);
        }
        if (s == HVD_OK) s = allgatherv(local, staged + share_start[li], staged, share_total);
        if (s != HVD_OK) return s;
        for (size_t hh = 0; hh < hosts; ++hh)
            for (size_t i = 0; i < shares; ++i)
                place(h.hosts[hh], bytes, out_at, share_at[hh][i], share_len[hh][i],
                      staged + share_start[i] + pos[hh][i], static_cast<char *>(out));
        return HVD_OK;
    });
}

}  // namespace hvd::collectives
