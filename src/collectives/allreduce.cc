// allreduce(): validation, the single-member fast path, and the choice of algorithm by size.
#include "collectives/collectives.h"
#include "collectives/shm/shm_sync.h"
#include "common/dtype.h"
#include "common/log.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

hvd_status_t check_allreduce_args(const Comm &comm, const void *buf, size_t count, int32_t dtype,
                                  int32_t op, const char *algorithm) {
    hvd_status_t st = comm.validate(algorithm);
    if (st != HVD_OK) return st;
    const char *problem = nullptr;
    if (!dtype_valid(dtype) || !reduce::op_supported(op)) {
        st = HVD_ERR_UNSUPPORTED;
        problem = "unsupported dtype or op";
    } else if (buf == nullptr && count > 0) {
        st = HVD_ERR_INVALID_ARG;
        problem = "null buffer";
    }
    if (problem != nullptr)
        HVD_LOG(kError, comm.global_rank(), "%s: %s (dtype %s, op %s, count %zu)", algorithm,
                problem, dtype_name(dtype), reduce_op_name(op), count);
    return st;
}

hvd_status_t allreduce(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op) {
    hvd_status_t st = check_allreduce_args(comm, buf, count, dtype, op, "allreduce");
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    // One host: through shared memory, no transport.
    if (comm.shm != nullptr) return allreduce_shm(comm, buf, count, dtype, op);
    // Recursive doubling moves the whole buffer log2(n) times but in only log2(n) rounds;
    // the ring moves 2(n-1)/n of it in 2(n-1) rounds. Rounds dominate small messages,
    // bytes large ones.
    if (count * dtype_size(dtype) <= recursive_doubling_max_bytes())
        return allreduce_recursive_doubling(comm, buf, count, dtype, op);
    return allreduce_ring(comm, buf, count, dtype, op);
}

}  // namespace hvd::collectives
