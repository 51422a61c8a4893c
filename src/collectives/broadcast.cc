// broadcast(): validation, the trivial cases, and the choice of algorithm by size.
#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "common/log.h"

namespace hvd::collectives {

hvd_status_t check_broadcast_args(const Comm &comm, const void *buf, size_t bytes,
                                  int32_t root_index, const char *algorithm) {
    hvd_status_t st = comm.validate(algorithm);
    if (st != HVD_OK) return st;
    const char *problem = nullptr;
    if (root_index < 0 || root_index >= comm.size()) {
        problem = "root outside the group";
    } else if (buf == nullptr && bytes > 0) {
        problem = "null buffer";
    }
    if (problem == nullptr) return HVD_OK;
    HVD_LOG(kError, comm.global_rank(), "%s: %s (root %d, group of %d, %zu bytes)", algorithm,
            problem, root_index, comm.size(), bytes);
    return HVD_ERR_INVALID_ARG;
}

hvd_status_t broadcast(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, "broadcast");
    if (st != HVD_OK || comm.size() == 1 || bytes == 0) return st;
    if (comm.shm != nullptr) return broadcast_shm(comm, buf, bytes, root_index);
    // The tree finishes in log2(n) message latencies but the root sends the whole buffer
    // log2(n) times; the chain sends it once per link and pays n-2 chunk latencies to fill.
    // With two ranks both are one link, and one whole message beats chunks (2 ranks, --bind:
    // 64 MiB 4.1 -> 6.1 GB/s, 8 MiB 8.9 -> 10.9 GB/s).
    if (bytes <= broadcast_tree_max_bytes() || comm.size() == 2)
        return broadcast_binomial_tree(comm, buf, bytes, root_index);
    return broadcast_chain(comm, buf, bytes, root_index);
}

}  // namespace hvd::collectives
