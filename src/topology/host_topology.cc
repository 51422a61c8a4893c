// SPDX-License-Identifier: Apache-2.0
#include "topology/host_topology.h"

#include <unistd.h>

#include "config/read.h"

namespace hvd::topology {

HostPlacement place_rank(const std::vector<std::string> &hosts, int32_t rank) {
    HostPlacement p;
    const int32_t n = static_cast<int32_t>(hosts.size());
    // local_rank of every rank, in one pass.
    std::vector<int32_t> local(static_cast<size_t>(n), 0);
    for (int32_t r = 0; r < n; ++r)
        for (int32_t q = 0; q < r; ++q)
            if (hosts[q] == hosts[r]) ++local[r];
    p.local_rank = local[rank];
    p.local_size = 0;
    p.cross_rank = 0;
    p.cross_size = 0;
    for (int32_t r = 0; r < n; ++r) {
        if (hosts[r] == hosts[rank]) ++p.local_size;
        if (local[r] == local[rank]) {
            if (r < rank) ++p.cross_rank;
            ++p.cross_size;
        }
    }
    return p;
}

std::string this_host_name() {
    if (const char *h = config::get_string(config::Setting::kHostname)) return h;
    char buf[256] = {0};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
    return buf;
}

}  // namespace hvd::topology
