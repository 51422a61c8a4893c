// SPDX-License-Identifier: Apache-2.0
// A job of N ranks as N threads of one process, each with its own context, joined through
// hvd_get_unique_id. A rank's body returns "" or what went wrong (cmocka's asserts are main
// thread only); run_on_ranks fails the test naming the rank. Shared by the in-process tests.
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace inprocess_job {

inline hvd_tensor_t tensor(void *data, int32_t dtype, int32_t ndim, const int64_t *shape) {
    hvd_tensor_t t;
    std::memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.shape = shape;
    t.device_type = HVD_DEVICE_CPU;
    return t;
}

// Joins the job behind `id` as `rank` of `size`; 30 s bound init and every op.
inline hvd_status_t join_job(const hvd_unique_id_t &id, int32_t rank, int32_t size,
                             hvd_context_h *ctx) {
    hvd_init_params_t ip;
    std::memset(&ip, 0, sizeof ip);
    ip.field_mask = HVD_INIT_FIELD_RANK | HVD_INIT_FIELD_UNIQUE_ID | HVD_INIT_FIELD_TIMEOUT;
    ip.rank = rank;
    ip.size = size;
    ip.unique_id = id;
    ip.timeout_ms = 30000;
    return hvd_init(&ip, ctx);
}

using RankBody = std::function<std::string(const hvd_unique_id_t &id, int32_t rank, int32_t size)>;

// Runs body on `size` rank threads of a new job; fails the test with the first rank's error.
inline void run_on_ranks(int32_t size, const RankBody &body) {
    hvd_unique_id_t id;
    assert_int_equal(hvd_get_unique_id(&id), HVD_OK);
    std::vector<std::string> errors(static_cast<size_t>(size));
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < size; ++r)
        threads.emplace_back([&, r] { errors[r] = body(id, r, size); });
    for (auto &th : threads)
        th.join();
    for (int32_t r = 0; r < size; ++r)
        if (!errors[r].empty()) fail_msg("size %d rank %d: %s", size, r, errors[r].c_str());
}

}  // namespace inprocess_job
