// SPDX-License-Identifier: Apache-2.0
#include "collectives/hierarchy.h"

#include <map>

namespace hvd::collectives {

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
    if (by_host.size() < 2 || by_host[0].size() < 2) return false;
    for (const std::vector<int32_t> &host : by_host)
        if (host.size() != by_host[0].size()) return false;
    return true;
}

Hierarchy make_hierarchy(const std::vector<std::vector<int32_t>> &by_host, int32_t rank) {
    Hierarchy h;
    for (size_t host = 0; host < by_host.size(); ++host) {
        const std::vector<int32_t> &ranks = by_host[host];
        for (size_t i = 0; i < ranks.size(); ++i) {
            if (ranks[i] != rank) continue;
            h.local_members = ranks;
            h.local_index = static_cast<int32_t>(i);
            h.cross_index = static_cast<int32_t>(host);
        }
    }
    for (const std::vector<int32_t> &ranks : by_host)
        if (static_cast<size_t>(h.local_index) < ranks.size())
            h.cross_members.push_back(ranks[h.local_index]);
    return h;
}

}  // namespace hvd::collectives
