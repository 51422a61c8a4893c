// SPDX-License-Identifier: Apache-2.0
#include "cpu_binding.h"

#include <sched.h>

namespace hvdrun {

bool assign_cpus(const std::vector<Placement> &ranks, const std::vector<int> &allowed,
                 std::vector<RankLaunch> *plan, std::string *err) {
    if (allowed.empty()) {
        *err = "--bind-to core: no CPU to bind to (hvdrun's CPU affinity is empty)";
        return false;
    }
    for (size_t i = 0; i < ranks.size() && i < plan->size(); ++i) {
        if ((*plan)[i].remote) {
            *err = "--bind-to core binds ranks on this host only; rank " +
                   std::to_string(ranks[i].rank) + " runs on " + ranks[i].host;
            return false;
        }
        (*plan)[i].cpu = allowed[static_cast<size_t>(ranks[i].local_rank) % allowed.size()];
    }
    return true;
}

std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return cpus;
}

}  // namespace hvdrun
