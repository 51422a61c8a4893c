// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by the collectives' entry points: HVD_OK, or the error, logged with
// the algorithm's name and what is wrong.
#include "collectives/collectives.h"
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

hvd_status_t check_allgatherv_args(const Comm &comm, const void *in, const void *out,
                                   const std::vector<size_t> &bytes, const char *algorithm) {
    hvd_status_t st = comm.validate(algorithm);
    if (st != HVD_OK) return st;
    const char *problem = nullptr;
    if (bytes.size() != static_cast<size_t>(comm.size())) {
        problem = "one size per member expected";
    } else if (in == nullptr && bytes[comm.my_index] > 0) {
        problem = "null input";
    } else if (out == nullptr) {
        for (size_t b : bytes)
            if (b > 0) problem = "null output";
    }
    if (problem == nullptr) return HVD_OK;
    HVD_LOG(kError, comm.global_rank(), "%s: %s (%zu sizes, group of %d)", algorithm, problem,
            bytes.size(), comm.size());
    return HVD_ERR_INVALID_ARG;
}

hvd_status_t check_reducescatter_args(const Comm &comm, const void *in, const void *out,
                                      const std::vector<size_t> &counts, int32_t dtype, int32_t op,
                                      const char *algorithm) {
    size_t total = 0;
    for (size_t c : counts)
        total += c;
    hvd_status_t st = check_allreduce_args(comm, in, total, dtype, op, algorithm);
    if (st != HVD_OK) return st;
    const char *problem = nullptr;
    if (counts.size() != static_cast<size_t>(comm.size())) {
        problem = "one count per member expected";
    } else if (out == nullptr && counts[comm.my_index] > 0) {
        problem = "null output";
    }
    if (problem == nullptr) return HVD_OK;
    HVD_LOG(kError, comm.global_rank(), "%s: %s (%zu counts adding up to %zu, group of %d)",
            algorithm, problem, counts.size(), total, comm.size());
    return HVD_ERR_INVALID_ARG;
}

}  // namespace hvd::collectives
