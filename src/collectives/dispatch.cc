// SPDX-License-Identifier: Apache-2.0
// The dispatching entry points (collectives.h): the arguments checked, the trivial calls
// answered, then the first algorithm of the collective's table (algorithms.h) that supports
// the call runs it.
#include <numeric>

#include "collectives/algorithms.h"
#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/log.h"

namespace hvd::collectives {

namespace {

const char *memory_name(Memory memory) {
    return memory == Memory::kHost ? "host" : "device";
}

size_t sum(const std::vector<size_t> &v) {
    return std::accumulate(v.begin(), v.end(), size_t{0});
}

}  // namespace

hvd_status_t no_algorithm(const Comm &comm, const char *collective, size_t bytes, Memory memory) {
    HVD_LOG(kError, comm.global_rank(), "%s: no algorithm for %zu bytes in %s memory (group of %d)",
            collective, bytes, memory_name(memory), comm.size());
    return HVD_ERR_UNSUPPORTED;
}

hvd_status_t allreduce(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, "allreduce");
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    const size_t bytes = count * dtype_size(dtype);
    const auto *a = choose(allreduce_algorithms(), comm, bytes, comm.memory);
    if (a == nullptr) return no_algorithm(comm, "allreduce", bytes, comm.memory);
    return a->run(comm, buf, count, dtype, op);
}

hvd_status_t broadcast(Comm &comm, void *buf, size_t bytes, int32_t root_index) {
    hvd_status_t st = check_broadcast_args(comm, buf, bytes, root_index, "broadcast");
    if (st != HVD_OK || comm.size() == 1 || bytes == 0) return st;
    const auto *a = choose(broadcast_algorithms(), comm, bytes, comm.memory);
    if (a == nullptr) return no_algorithm(comm, "broadcast", bytes, comm.memory);
    return a->run(comm, buf, bytes, root_index);
}

hvd_status_t allgatherv(Comm &comm, const void *in, void *out, const std::vector<size_t> &bytes) {
    hvd_status_t st = check_allgatherv_args(comm, in, out, bytes, "allgatherv");
    if (st != HVD_OK) return st;
    const size_t total = sum(bytes);
    const auto *a = choose(allgatherv_algorithms(), comm, total, comm.memory);
    if (a == nullptr) return no_algorithm(comm, "allgatherv", total, comm.memory);
    return a->run(comm, in, out, bytes);
}

hvd_status_t alltoallv(Comm &comm, const void *in, const std::vector<size_t> &send_bytes, void *out,
                       const std::vector<size_t> &recv_bytes) {
    const size_t total = sum(send_bytes);
    const auto *a = choose(alltoallv_algorithms(), comm, total, comm.memory);
    if (a == nullptr) return no_algorithm(comm, "alltoallv", total, comm.memory);
    return a->run(comm, in, send_bytes, out, recv_bytes);
}

hvd_status_t reducescatter(Comm &comm, const void *in, void *out, const std::vector<size_t> &counts,
                           int32_t dtype, int32_t op) {
    const size_t bytes = sum(counts) * (dtype_valid(dtype) ? dtype_size(dtype) : 0);
    const auto *a = choose(reducescatter_algorithms(), comm, bytes, comm.memory);
    if (a == nullptr) return no_algorithm(comm, "reducescatter", bytes, comm.memory);
    return a->run(comm, in, out, counts, dtype, op);
}

}  // namespace hvd::collectives
