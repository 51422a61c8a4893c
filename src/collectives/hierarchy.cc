// SPDX-License-Identifier: Apache-2.0
#include "collectives/hierarchy.h"

#include <algorithm>
#include <map>

#include "common/error.h"

namespace hvd::collectives {

size_t Hierarchy::min_local_size() const {
    size_t fewest = local_members.size();
    for (const std::vector<int32_t> &ranks : hosts)
        fewest = ranks.size() < fewest ? ranks.size() : fewest;
    return fewest;
}

Comm Hierarchy::sub_comm(const Comm &comm, const std::vector<int32_t> &members, int32_t index,
                         shm::Group *shm) {
    Comm sub = comm;
    sub.members = members;
    sub.my_index = index;
    sub.shm = shm;
    sub.hierarchy = nullptr;
    return sub;
}

std::vector<std::vector<int32_t>> ranks_by_host(const std::vector<std::string> &hosts) {
    std::vector<std::vector<int32_t>> by_host;
    std::map<std::string, size_t> index;
    for (size_t r = 0; r < hosts.size(); ++r) {
        auto it = index.emplace(hosts[r], by_host.size()).first;
        if (it->second == by_host.size()) by_host.emplace_back();
        by_host[it->second].push_back(static_cast<int32_t>(r));
    }
    return by_host;
}

bool hierarchy_applies(const std::vector<std::vector<int32_t>> &by_host) {
    return spans_hosts(by_host, false);
}

bool spans_hosts(const std::vector<std::vector<int32_t>> &by_host, bool any_size) {
    if (by_host.size() < 2) return false;
    for (const std::vector<int32_t> &host : by_host)
        if (any_size || host.size() > 1) return true;
    return false;
}

std::vector<int32_t> choose_share_holders(const std::vector<RankPlace> &places, size_t shares) {
    // Groups of local indices by NIC, each cut into groups by NUMA node (both in order of
    // first appearance); each NIC's ranks taken in turn from its NUMA nodes, then the NICs in
    // turn: the first `shares` of that order hold.
    std::vector<std::string> nics;
    std::vector<std::vector<std::vector<int32_t>>> groups;  // [nic][numa group] -> indices
    std::vector<std::vector<int>> numas;                    // [nic] -> NUMA node of each group
    for (size_t i = 0; i < places.size(); ++i) {
        size_t n = std::find(nics.begin(), nics.end(), places[i].nic) - nics.begin();
        if (n == nics.size()) {
            nics.push_back(places[i].nic);
            groups.emplace_back();
            numas.emplace_back();
        }
        size_t g =
            std::find(numas[n].begin(), numas[n].end(), places[i].numa_node) - numas[n].begin();
        if (g == numas[n].size()) {
            numas[n].push_back(places[i].numa_node);
            groups[n].emplace_back();
        }
        groups[n][g].push_back(static_cast<int32_t>(i));
    }
    std::vector<std::vector<int32_t>> by_nic(nics.size());  // each NIC's ranks, NUMA in turn
    for (size_t n = 0; n < nics.size(); ++n)
        for (size_t round = 0;; ++round) {
            size_t before = by_nic[n].size();
            for (const std::vector<int32_t> &g : groups[n])
                if (round < g.size()) by_nic[n].push_back(g[round]);
            if (by_nic[n].size() == before) break;
        }
    std::vector<int32_t> holders;
    for (size_t round = 0; holders.size() < shares && round < places.size(); ++round)
        for (size_t n = 0; n < by_nic.size() && holders.size() < shares; ++n)
            if (round < by_nic[n].size()) holders.push_back(by_nic[n][round]);
    std::sort(holders.begin(), holders.end());
    return holders;
}

Hierarchy make_hierarchy(const std::vector<std::vector<int32_t>> &by_host, int32_t rank,
                         const std::vector<RankPlace> &places) {
    Hierarchy h;
    h.hosts = by_host;
    for (size_t host = 0; host < by_host.size(); ++host) {
        const std::vector<int32_t> &ranks = by_host[host];
        for (size_t i = 0; i < ranks.size(); ++i) {
            if (ranks[i] != rank) continue;
            h.local_members = ranks;
            h.local_index = static_cast<int32_t>(i);
            h.host_index = static_cast<int32_t>(host);
        }
    }
    const size_t shares = h.min_local_size();
    // Every host's holders, in share order.
    std::vector<std::vector<int32_t>> holders(by_host.size());
    for (size_t host = 0; host < by_host.size(); ++host) {
        std::vector<RankPlace> host_places(by_host[host].size());
        for (size_t i = 0; i < host_places.size(); ++i)
            if (static_cast<size_t>(by_host[host][i]) < places.size())
                host_places[i] = places[by_host[host][i]];
        holders[host] = choose_share_holders(host_places, shares);
    }
    h.local_share.assign(h.local_members.size(), -1);
    const std::vector<int32_t> &mine = holders[h.host_index];
    for (size_t s = 0; s < mine.size(); ++s)
        h.local_share[mine[s]] = static_cast<int32_t>(s);
    const int32_t share = h.my_share();
    for (size_t host = 0; share >= 0 && host < by_host.size(); ++host) {
        const int32_t holder = by_host[host][holders[host][share]];
        if (holder == rank) h.cross_index = static_cast<int32_t>(h.cross_members.size());
        h.cross_members.push_back(holder);
    }
    if (!hierarchy_applies(by_host)) h.allreduce_min_bytes = kHierarchyOff;
    return h;
}

hvd_status_t check_hierarchy(const Comm &comm, const char *algorithm) {
    const Hierarchy *h = comm.hierarchy;
    std::string problem;
    if (h == nullptr) {
        problem = "no host hierarchy";
    } else if (h->local_members.size() > 1 && h->local_shm == nullptr) {
        problem = "no shared memory on this host";
    } else if (h->local_share.size() != h->local_members.size()) {
        problem = "no share holders for this host";
    } else {
        size_t ranks = 0;
        for (const std::vector<int32_t> &host : h->hosts)
            ranks += host.size();
        bool in_order = ranks == static_cast<size_t>(comm.size());
        for (int32_t i = 0; in_order && i < comm.size(); ++i)
            in_order = comm.members[i] == i;
        if (!in_order)
            problem = strprintf("the hierarchy has %zu ranks, the group %d (in rank order)", ranks,
                                comm.size());
    }
    if (problem.empty()) return HVD_OK;
    return comm.abort_with(HVD_ERR_INVALID_ARG, std::string(algorithm) + ": " + problem);
}

void cut_shares(size_t bytes, size_t shares, std::vector<size_t> *offsets,
                std::vector<size_t> *sizes) {
    offsets->resize(shares);
    sizes->resize(shares);
    size_t at = 0;
    for (size_t i = 0; i < shares; ++i) {
        (*offsets)[i] = at;
        (*sizes)[i] = bytes / shares + (i < bytes % shares ? 1 : 0);
        at += (*sizes)[i];
    }
}

}  // namespace hvd::collectives
