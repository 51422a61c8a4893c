// SPDX-License-Identifier: Apache-2.0
// Ragged allgather of a job that spans hosts, in three steps, all in place in the output (L:
// the fewest ranks any host runs; a host's block: its ranks' blocks in rank order, which sit
// in the output as one range per run of consecutive ranks):
//  1. within each host, through its shared-memory group, the host's ranks gather the host's
//     block into their places in the output;
//  2. every host's block is cut into L shares; the holder of share i (L local ranks hold one
//     each, Hierarchy::local_share) gathers share i of every host's block with the holders of
//     share i on the other hosts (ring over the transport), straight into the output, so the
//     ranks of a host carry its bytes across the network at once, one flow each;
//  3. within each host the ranks gather the other hosts' shares that crossed, each read from
//     the output of the rank that received it into the same places of the others' (the local
//     ranks that hold no share, on hosts with more than L ranks, have none to give).
// No step stages a copy: each byte is written into the output once per rank. Any ranks per
// host and any placement of ranks on hosts.
#include <algorithm>
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/hierarchy.h"
#include "collectives/placed_gather.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "hierarchical allgatherv";

// The ranges of the output that hold bytes [from, from + len) of the host block of `ranks`
// (their blocks of `bytes` in order; out_at: each rank's offset in the output).
void add_host_ranges(const std::vector<int32_t> &ranks, const std::vector<size_t> &bytes,
                     const std::vector<size_t> &out_at, size_t from, size_t len, Ranges *out) {
    size_t at = 0;  // the rank's block within the host block
    for (int32_t r : ranks) {
        const size_t lo = std::max(at, from), hi = std::min(at + bytes[r], from + len);
        if (lo < hi) add_range(out, out_at[r] + (lo - at), hi - lo);
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
    const size_t mine = static_cast<size_t>(h.host_index);
    const size_t local_n = h.local_members.size();
    std::vector<size_t> out_at(bytes.size());
    size_t total = 0;
    for (size_t r = 0; r < bytes.size(); ++r) {
        out_at[r] = total;
        total += bytes[r];
    }
    if (total == 0) return HVD_OK;
    char *o = static_cast<char *>(out);
    return comm.guarded(kName, [&] {
        const int32_t me = comm.my_index;
        if (bytes[me] > 0 && in != o + out_at[me]) std::memcpy(o + out_at[me], in, bytes[me]);
        Comm local = h.local_comm(comm);
        // Step 1: the host's ranks' blocks.
        std::vector<Ranges> parts(local_n);
        for (size_t m = 0; m < local_n; ++m)
            add_range(&parts[m], out_at[h.local_members[m]], bytes[h.local_members[m]]);
        hvd_status_t s = local_n > 1 ? allgather_ranges_shm(local, o, total, parts) : HVD_OK;
        // share[hh][i]: the output's ranges of share i of host hh's block.
        std::vector<std::vector<Ranges>> share(hosts, std::vector<Ranges>(shares));
        for (size_t hh = 0; hh < hosts; ++hh) {
            size_t host_bytes = 0;
            for (int32_t r : h.hosts[hh])
                host_bytes += bytes[r];
            std::vector<size_t> at, len;
            cut_shares(host_bytes, shares, &at, &len);
            for (size_t i = 0; i < shares; ++i)
                add_host_ranges(h.hosts[hh], bytes, out_at, at[i], len[i], &share[hh][i]);
        }
        // Step 2: this rank's share of every host's block, across hosts.
        if (s == HVD_OK && h.my_share() >= 0) {
            Comm cross = h.cross_comm(comm);
            std::vector<Ranges> cross_parts(hosts);
            for (size_t hh = 0; hh < hosts; ++hh)
                cross_parts[hh] = share[hh][h.my_share()];
            s = allgather_ranges_ring(cross, o, cross_parts);
        }
        if (s != HVD_OK || local_n == 1) return s;
        // Step 3: the other hosts' shares, from the local rank that received each.
        for (size_t m = 0; m < local_n; ++m) {
            parts[m].clear();
            const int32_t held = h.local_share[m];
            for (size_t hh = 0; hh < hosts && held >= 0; ++hh)
                if (hh != mine)
                    for (const ByteRange &r : share[hh][held])
                        add_range(&parts[m], r.at, r.len);
        }
        return allgather_ranges_shm(local, o, total, parts);
    });
}

}  // namespace hvd::collectives
