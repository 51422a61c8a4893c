// SPDX-License-Identifier: Apache-2.0
// A process set destroyed while ops on it are still queued (hvd.h: they fail with
// HVD_ERR_INVALID_ARG): one thread of each rank destroys the set while another enqueues an
// allreduce on it, with and without a cycle time that holds new ops back before they are
// reported. The op completes or fails with HVD_ERR_INVALID_ARG, never aborts the context: a
// global allreduce afterwards still gives the exact sum on 2 and 3 ranks.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace {

std::string last_error() {
    char buf[512];
    hvd_last_error(buf, sizeof buf);
    return buf;
}

using inprocess_job::join_job;
using inprocess_job::run_on_ranks;
using inprocess_job::tensor;

std::string race_once(hvd_context_h ctx, int32_t rank, int32_t size, int delay_us) {
    std::vector<int32_t> all(static_cast<size_t>(size));
    for (int32_t r = 0; r < size; ++r)
        all[r] = r;
    hvd_process_set_h ps = nullptr;
    if (hvd_process_set_create(ctx, all.data(), size, &ps) != HVD_OK) return "create failed";
    int64_t shape[1] = {4};
    float data[4] = {1, 2, 3, 4};
    hvd_tensor_t t = tensor(data, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p;
    std::memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_PROCESS_SET;
    p.name = "raced";
    p.process_set = ps;
    hvd_status_t destroyed = HVD_ERR_INTERNAL;
    std::thread destroyer([&] { destroyed = hvd_process_set_destroy(ctx, ps); });
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    hvd_request_h req = nullptr;
    hvd_status_t s = hvd_allreduce_enqueue(ctx, &t, &t, &p, &req);
    if (s == HVD_OK) {
        s = hvd_request_wait(req, 30000);
        hvd_request_release(req);
    }
    destroyer.join();
    if (destroyed != HVD_OK) return hvd::strprintf("destroy: %d", static_cast<int>(destroyed));
    if (s != HVD_OK && s != HVD_ERR_INVALID_ARG)
        return hvd::strprintf("raced allreduce (delay %d us): %d %s", delay_us, static_cast<int>(s),
                              last_error().c_str());
    // The context is alive: a global allreduce gives the exact sum.
    float v = static_cast<float>(rank + 1);
    hvd_tensor_t g = tensor(&v, HVD_DTYPE_FLOAT32, 0, nullptr);
    hvd_op_params_t gp;
    std::memset(&gp, 0, sizeof gp);
    s = hvd_allreduce_enqueue(ctx, &g, &g, &gp, &req);
    if (s != HVD_OK)
        return hvd::strprintf("global enqueue: %d %s", static_cast<int>(s), last_error().c_str());
    s = hvd_request_wait(req, 30000);
    hvd_request_release(req);
    if (s != HVD_OK)
        return hvd::strprintf("global allreduce: %d %s", static_cast<int>(s), last_error().c_str());
    if (v != static_cast<float>(size * (size + 1) / 2)) return "global allreduce: wrong sum";
    return "";
}

void run_races(int32_t size, double cycle_ms) {
    run_on_ranks(size, [&](const hvd_unique_id_t &id, int32_t rank, int32_t n) -> std::string {
        hvd_context_h ctx = nullptr;
        if (join_job(id, rank, n, &ctx) != HVD_OK) return "init failed";
        if (hvd_config_set(ctx, HVD_CONFIG_CYCLE_TIME, cycle_ms) != HVD_OK) return "config";
        std::string err;
        for (int delay_us : {0, 50, 200, 1000, 5000}) {
            err = race_once(ctx, rank, n, delay_us);
            if (!err.empty()) {
                std::fprintf(stderr, "rank %d of %d: %s\n", rank, n, err.c_str());
                break;
            }
        }
        hvd_finalize(ctx);
        return err;
    });
}

void test_destroy_races_enqueue(void **) {
    for (int32_t size : {2, 3}) {
        run_races(size, 0);
        run_races(size, 5);
    }
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_destroy_races_enqueue),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
