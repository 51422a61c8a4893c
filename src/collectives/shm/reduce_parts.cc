// SPDX-License-Identifier: Apache-2.0
// The reduction step the shared-memory allreduce and reduce-scatter share: one range of the
// members' staged data, combined in member order.
#include "collectives/shm/shm_sync.h"
#include "reduce/reduce.h"

namespace hvd::collectives {

hvd_status_t reduce_parts(const shm::Group &g, uint64_t round, size_t at, const char *own,
                          void *acc, void *dst, void *copy, size_t count, int32_t dtype, int32_t op,
                          double scale) {
    auto part = [&](int32_t m) -> const char * {
        return m == g.my_index() ? own : g.slot(m, round) + at;
    };
    const int32_t n = g.size();
    hvd_status_t s = HVD_OK;
    for (int32_t m = 1; m < n && s == HVD_OK; ++m) {
        const void *sum = m == 1 ? part(0) : acc;
        if (m == n - 1)
            s = reduce::reduce_into_scaled(dst, copy, sum, part(m), count, dtype, op, scale);
        else
            s = reduce::reduce_into(acc, sum, part(m), count, dtype, op);
    }
    return s;
}

}  // namespace hvd::collectives
