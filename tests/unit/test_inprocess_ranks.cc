// SPDX-License-Identifier: Apache-2.0
// N ranks as N threads of one process, each with its own context (no global state), joined
// through hvd_get_unique_id: allreduce, ragged allgather and broadcast checked against
// references computed here, for N = 1, 2, 3 and 4.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "capi/handles.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace {

using inprocess_job::join_job;
using inprocess_job::tensor;

// Returns "" on success, else what went wrong (cmocka asserts are not thread-safe).
std::string run_rank(const hvd_unique_id_t &id, int32_t rank, int32_t size) {
    hvd_context_h ctx;
    if (join_job(id, rank, size, &ctx) != HVD_OK) return "init failed";
    std::string err;
    int32_t r = -1, s = -1;
    hvd_rank(ctx, nullptr, &r);
    hvd_size(ctx, nullptr, &s);
    if (r != rank || s != size) err = "rank/size wrong";

    // allreduce: rank r holds r + i; sum = size*i + size(size-1)/2
    std::vector<double> a(1000);
    for (size_t i = 0; i < a.size(); ++i)
        a[i] = rank + static_cast<double>(i);
    int64_t shape[1] = {static_cast<int64_t>(a.size())};
    hvd_tensor_t t = tensor(a.data(), HVD_DTYPE_FLOAT64, 1, shape);
    hvd_request_h req;
    if (hvd_allreduce_enqueue(ctx, &t, &t, nullptr, &req) != HVD_OK ||
        hvd_request_wait(req, 30000) != HVD_OK)
        err = "allreduce failed";
    else
        hvd_request_release(req);
    for (size_t i = 0; i < a.size() && err.empty(); ++i)
        if (a[i] != size * static_cast<double>(i) + size * (size - 1) / 2.0)
            err = "allreduce result wrong at " + std::to_string(i);

    // ragged allgather: rank r sends r rows of value r
    std::vector<int64_t> rows(static_cast<size_t>(rank) + 1, rank);
    int64_t gshape[1] = {rank};
    hvd_tensor_t g = tensor(rows.data(), HVD_DTYPE_INT64, 1, gshape);
    if (err.empty() && (hvd_allgather_enqueue(ctx, &g, nullptr, &req) != HVD_OK ||
                        hvd_request_wait(req, 30000) != HVD_OK)) {
        err = "allgather failed";
    } else if (err.empty()) {
        hvd_tensor_t out;
        hvd_request_output(req, 0, &out);
        const auto *v = static_cast<const int64_t *>(out.data);
        int64_t pos = 0;
        if (out.shape[0] != size * (size - 1) / 2) err = "allgather shape wrong";
        for (int32_t q = 0; q < size && err.empty(); ++q)
            for (int32_t k = 0; k < q; ++k)
                if (v[pos++] != q) err = "allgather content wrong";
        hvd_request_release(req);
    }

    // broadcast from the last rank
    float b[3] = {-1, -1, -1};
    if (rank == size - 1) b[0] = 1, b[1] = 2, b[2] = 3;
    int64_t bshape[1] = {3};
    hvd_tensor_t bt = tensor(b, HVD_DTYPE_FLOAT32, 1, bshape);
    hvd_op_params_t p;
    std::memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_ROOT;
    p.root_rank = size - 1;
    if (err.empty() && (hvd_broadcast_enqueue(ctx, &bt, &bt, &p, &req) != HVD_OK ||
                        hvd_request_wait(req, 30000) != HVD_OK))
        err = "broadcast failed";
    else if (err.empty())
        hvd_request_release(req);
    if (err.empty() && (b[0] != 1 || b[1] != 2 || b[2] != 3)) err = "broadcast result wrong";

    if (hvd_finalize(ctx) != HVD_OK && err.empty()) err = "finalize failed";
    return err;
}

void run_job(int32_t size) {
    inprocess_job::run_on_ranks(size, run_rank);
}

void test_one_rank(void **) {
    run_job(1);
}
void test_two_ranks(void **) {
    run_job(2);
}
void test_three_ranks(void **) {
    run_job(3);
}
void test_four_ranks(void **) {
    run_job(4);
}

// Knobs a fusion run sets on its context first (negative: left alone), and the pause between
// two enqueues.
struct FusionRun {
    double threshold_bytes = -1;
    double cycle_ms = -1;
    int gap_ms = 0;
};

// 64 small allreduces enqueued back to back on each rank: the coordinator sees them ready
// together and fuses them; every result must still be exact.
std::string run_fusion_rank(const hvd_unique_id_t &id, int32_t rank, int32_t size, uint64_t *fused,
                            const FusionRun &how = FusionRun()) {
    hvd_context_h ctx;
    if (join_job(id, rank, size, &ctx) != HVD_OK) return "init failed";
    if (how.threshold_bytes >= 0 &&
        hvd_config_set(ctx, HVD_CONFIG_FUSION_THRESHOLD, how.threshold_bytes) != HVD_OK)
        return "setting the fusion threshold failed";
    if (how.cycle_ms >= 0 && hvd_config_set(ctx, HVD_CONFIG_CYCLE_TIME, how.cycle_ms) != HVD_OK)
        return "setting the cycle time failed";
    enum { kTensors = 64, kLen = 33 };
    std::vector<std::vector<int32_t>> data(kTensors, std::vector<int32_t>(kLen));
    std::vector<hvd_request_h> reqs(kTensors);
    int64_t shape[1] = {kLen};
    std::string err;
    // Everyone enqueues all tensors before any rank's engine can see them all: wait for the
    // others with a barrier first.
    hvd_request_h barrier;
    hvd_barrier_enqueue(ctx, nullptr, &barrier);
    hvd_request_wait(barrier, 30000);
    hvd_request_release(barrier);
    for (int t = 0; t < kTensors; ++t) {
        for (int i = 0; i < kLen; ++i)
            data[t][i] = rank * 1000 + t * 10 + i;
        hvd_tensor_t tensor_t = tensor(data[t].data(), HVD_DTYPE_INT32, 1, shape);
        if (hvd_allreduce_enqueue(ctx, &tensor_t, &tensor_t, nullptr, &reqs[t]) != HVD_OK)
            err = "enqueue failed";
        if (how.gap_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(how.gap_ms));
    }
    for (int t = 0; t < kTensors && err.empty(); ++t) {
        if (hvd_request_wait(reqs[t], 30000) != HVD_OK) err = "allreduce failed";
        hvd_request_release(reqs[t]);
        for (int i = 0; i < kLen && err.empty(); ++i)
            if (data[t][i] != 1000 * size * (size - 1) / 2 + size * (t * 10 + i))
                err = "fused result wrong";
    }
    *fused = ctx->ctx->engine().fused_tensors();
    if (hvd_finalize(ctx) != HVD_OK && err.empty()) err = "finalize failed";
    return err;
}

// Runs body (one rank's part, returning "" or what went wrong, and its fused-tensor count) on
// `size` rank threads of one job; returns the count every rank agreed on (the coordinator
// decides fusion for all).
using FusionBody =
    std::function<std::string(const hvd_unique_id_t &, int32_t, int32_t, uint64_t *)>;
uint64_t fused_tensors_on_ranks(int32_t size, const FusionBody &body) {
    std::vector<uint64_t> fused(size, 0);
    inprocess_job::run_on_ranks(size, [&](const hvd_unique_id_t &id, int32_t r, int32_t n) {
        return body(id, r, n, &fused[r]);
    });
    for (int32_t r = 0; r < size; ++r)
        assert_int_equal(fused[r], fused[0]);
    return fused[0];
}

uint64_t fused_tensors_of_run(int32_t size, const FusionRun &how) {
    return fused_tensors_on_ranks(
        size, [&how](const hvd_unique_id_t &id, int32_t r, int32_t n, uint64_t *fused) {
            return run_fusion_rank(id, r, n, fused, how);
        });
}

void test_small_tensors_are_fused(void **) {
    assert_true(fused_tensors_of_run(3, FusionRun()) > 1);
}

// One rank: fused runs of allreduces, in place and out of place, with and without scale
// factors, Sum and Average; each result is its own input times prescale x postscale, and an
// out-of-place op leaves its input alone.
std::string run_one_rank_fused_scales(const hvd_unique_id_t &id, int32_t rank, int32_t size,
                                      uint64_t *fused) {
    hvd_context_h ctx;
    if (join_job(id, rank, size, &ctx) != HVD_OK) return "init failed";
    enum { kTensors = 48, kLen = 17 };
    auto input = [](int t, int i) { return static_cast<double>(t * 100 + i) - 700.0; };
    std::vector<std::vector<double>> in(kTensors, std::vector<double>(kLen));
    std::vector<std::vector<double>> out(kTensors, std::vector<double>(kLen, -1.0));
    std::vector<hvd_request_h> reqs(kTensors);
    int64_t shape[1] = {kLen};
    std::string err;
    auto factor = [](int t) { return t % 3 == 0 ? 1.0 : 1.5 * 0.25; };
    for (int t = 0; t < kTensors && err.empty(); ++t) {
        for (int i = 0; i < kLen; ++i)
            in[t][i] = input(t, i);
        bool in_place = t % 2 == 0;
        hvd_tensor_t x = tensor(in[t].data(), HVD_DTYPE_FLOAT64, 1, shape);
        hvd_tensor_t y =
            tensor(in_place ? in[t].data() : out[t].data(), HVD_DTYPE_FLOAT64, 1, shape);
        hvd_op_params_t p;
        std::memset(&p, 0, sizeof p);
        p.field_mask = HVD_OP_FIELD_REDUCE_OP;
        p.reduce_op = t % 4 < 2 ? HVD_OP_SUM : HVD_OP_AVERAGE;
        if (factor(t) != 1.0) {
            p.field_mask |= HVD_OP_FIELD_SCALE;
            p.prescale = 1.5;
            p.postscale = 0.25;
        }
        if (hvd_allreduce_enqueue(ctx, &x, &y, &p, &reqs[t]) != HVD_OK) err = "enqueue failed";
    }
    for (int t = 0; t < kTensors; ++t) {
        if (err.empty() && hvd_request_wait(reqs[t], 30000) != HVD_OK) err = "allreduce failed";
        const std::vector<double> &result = t % 2 == 0 ? in[t] : out[t];
        for (int i = 0; i < kLen && err.empty(); ++i) {
            if (result[i] != input(t, i) * factor(t))
                err = "tensor " + std::to_string(t) + " element " + std::to_string(i) + ": " +
                      std::to_string(result[i]) + ", expected " +
                      std::to_string(input(t, i) * factor(t));
            if (t % 2 == 1 && in[t][i] != input(t, i)) err = "out-of-place input changed";
        }
        hvd_request_release(reqs[t]);
    }
    *fused = ctx->ctx->engine().fused_tensors();
    if (hvd_finalize(ctx) != HVD_OK && err.empty()) err = "finalize failed";
    return err;
}

void test_one_rank_fused_allreduce_scales(void **) {
    assert_true(fused_tensors_on_ranks(1, run_one_rank_fused_scales) > 1);
}

// 32 ragged allgathers, then 32 reducescatters (rank r gives r + 1 + t % 3 rows; the
// reducescatters split 2n + t rows), enqueued back to back after a barrier: the coordinator
// fuses runs of each kind; every output must match a reference computed here.
std::string run_gather_scatter_fusion_rank(const hvd_unique_id_t &id, int32_t rank, int32_t size,
                                           uint64_t *fused) {
    hvd_context_h ctx;
    if (join_job(id, rank, size, &ctx) != HVD_OK) return "init failed";
    enum { kTensors = 32, kCols = 3 };
    auto value = [](int32_t r, int t, int64_t row, int col) {
        return static_cast<double>(r * 1000 + t * 20 + row * 3 + col);
    };
    std::vector<std::vector<double>> gather_in(kTensors), scatter_in(kTensors);
    std::vector<std::vector<int64_t>> gather_shape(kTensors), scatter_shape(kTensors);
    std::vector<hvd_request_h> gathers(kTensors), scatters(kTensors);
    hvd_request_h barrier;
    hvd_barrier_enqueue(ctx, nullptr, &barrier);
    hvd_request_wait(barrier, 30000);
    hvd_request_release(barrier);
    std::string err;
    for (int t = 0; t < kTensors; ++t) {
        int64_t rows = rank + 1 + t % 3;
        gather_shape[t] = {rows, kCols};
        for (int64_t i = 0; i < rows; ++i)
            for (int c = 0; c < kCols; ++c)
                gather_in[t].push_back(value(rank, t, i, c));
        hvd_tensor_t g = tensor(gather_in[t].data(), HVD_DTYPE_FLOAT64, 2, gather_shape[t].data());
        if (hvd_allgather_enqueue(ctx, &g, nullptr, &gathers[t]) != HVD_OK) err = "enqueue failed";
    }
    for (int t = 0; t < kTensors; ++t) {
        int64_t srows = 2 * size + t;
        scatter_shape[t] = {srows, kCols};
        for (int64_t i = 0; i < srows; ++i)
            for (int c = 0; c < kCols; ++c)
                scatter_in[t].push_back(value(rank, t, i, c));
        hvd_tensor_t x =
            tensor(scatter_in[t].data(), HVD_DTYPE_FLOAT64, 2, scatter_shape[t].data());
        hvd_op_params_t p;
        std::memset(&p, 0, sizeof p);
        p.field_mask = HVD_OP_FIELD_REDUCE_OP;
        p.reduce_op = HVD_OP_SUM;
        if (hvd_reducescatter_enqueue(ctx, &x, &p, &scatters[t]) != HVD_OK) err = "enqueue failed";
    }
    for (int t = 0; t < kTensors && err.empty(); ++t) {
        hvd_tensor_t out;
        if (hvd_request_wait(gathers[t], 30000) != HVD_OK ||
            hvd_request_output(gathers[t], 0, &out) != HVD_OK) {
            err = "allgather failed";
            break;
        }
        const double *got = static_cast<const double *>(out.data);
        size_t k = 0;
        for (int32_t r = 0; r < size && err.empty(); ++r)
            for (int64_t i = 0; i < r + 1 + t % 3; ++i)
                for (int c = 0; c < kCols; ++c)
                    if (got[k++] != value(r, t, i, c)) err = "fused allgather result wrong";
        if (err.empty() && out.shape[0] != static_cast<int64_t>(k / kCols))
            err = "fused allgather shape wrong";
        if (hvd_request_wait(scatters[t], 30000) != HVD_OK ||
            hvd_request_output(scatters[t], 0, &out) != HVD_OK) {
            err = "reducescatter failed";
            break;
        }
        int64_t srows = 2 * size + t;
        int64_t first = 0;
        for (int32_t r = 0; r < rank; ++r)
            first += srows / size + (r < srows % size ? 1 : 0);
        int64_t mine = srows / size + (rank < srows % size ? 1 : 0);
        if (out.shape[0] != mine) err = "fused reducescatter shape wrong";
        got = static_cast<const double *>(out.data);
        for (int64_t i = 0; i < mine && err.empty(); ++i)
            for (int c = 0; c < kCols; ++c) {
                double sum = 0;
                for (int32_t r = 0; r < size; ++r)
                    sum += value(r, t, first + i, c);
                if (got[i * kCols + c] != sum) err = "fused reducescatter result wrong";
            }
    }
    for (int t = 0; t < kTensors; ++t) {
        hvd_request_release(gathers[t]);
        hvd_request_release(scatters[t]);
    }
    *fused = ctx->ctx->engine().fused_tensors();
    if (hvd_finalize(ctx) != HVD_OK && err.empty()) err = "finalize failed";
    return err;
}

void test_allgathers_and_reducescatters_are_fused(void **) {
    assert_true(fused_tensors_on_ranks(3, run_gather_scatter_fusion_rank) > 2);
}

// hvd_config_set(ctx, FUSION_THRESHOLD, 0) turns fusion off at run time.
void test_zero_fusion_threshold_disables_fusion(void **) {
    FusionRun how;
    how.threshold_bytes = 0;
    assert_int_equal(fused_tensors_of_run(2, how), 0);
}

// With a cycle time, ops enqueued a few ms apart are held and reported together, so they
// fuse; without one, each is reported (and, with nothing else ready, run) on its own.
void test_cycle_time_batches_ops_for_fusion(void **) {
    FusionRun spaced;
    spaced.gap_ms = 4;
    spaced.cycle_ms = 500;
    assert_true(fused_tensors_of_run(2, spaced) > 8);
}

// Process-wide defaults and argument checks of hvd_config_get/set.
void test_config_values_and_errors(void **) {
    double v = -1;
    assert_int_equal(hvd_config_get(nullptr, HVD_CONFIG_FUSION_THRESHOLD, &v), HVD_OK);
    assert_true(v == 128.0 * 1024 * 1024);
    assert_int_equal(hvd_config_get(nullptr, HVD_CONFIG_STALL_CHECK_TIME, &v), HVD_OK);
    assert_true(v == 60.0);
    assert_int_equal(hvd_config_set(nullptr, HVD_CONFIG_CYCLE_TIME, 2.5), HVD_OK);
    assert_int_equal(hvd_config_get(nullptr, HVD_CONFIG_CYCLE_TIME, &v), HVD_OK);
    assert_true(v == 2.5);
    assert_int_equal(hvd_config_set(nullptr, HVD_CONFIG_CYCLE_TIME, 0), HVD_OK);
    assert_int_equal(hvd_config_set(nullptr, HVD_CONFIG_CYCLE_TIME, -1), HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_config_set(nullptr, HVD_CONFIG_FUSION_THRESHOLD, 0.0 / 0.0),
                     HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_config_set(nullptr, HVD_CONFIG_AUTOTUNE, 2), HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_config_set(nullptr, 99, 1), HVD_ERR_INVALID_ARG);
    char msg[256];
    hvd_last_error(msg, sizeof msg);
    assert_non_null(std::strstr(msg, "unknown configuration key 99"));
    assert_int_equal(hvd_config_get(nullptr, 99, &v), HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_config_get(nullptr, HVD_CONFIG_AUTOTUNE, nullptr), HVD_ERR_INVALID_ARG);
}

// An idle engine sleeps on its event fds: two joined ranks idle for 3 s use (far) less than
// 5 % of one core between them.
void test_idle_engine_uses_no_cpu(void **) {
    hvd_unique_id_t id;
    assert_int_equal(hvd_get_unique_id(&id), HVD_OK);
    hvd_context_h ctxs[2];
    hvd_status_t other_status = HVD_ERR_INTERNAL;  // asserted here: cmocka is main-thread only
    std::thread other([&] { other_status = join_job(id, 1, 2, &ctxs[1]); });
    assert_int_equal(join_job(id, 0, 2, &ctxs[0]), HVD_OK);
    other.join();
    assert_int_equal(other_status, HVD_OK);
    auto cpu_seconds = [] {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    };
    double before = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    double used = cpu_seconds() - before;
    std::thread fin([&] { hvd_finalize(ctxs[1]); });
    hvd_finalize(ctxs[0]);
    fin.join();
    if (used > 0.15) fail_msg("idle engines used %.3f s of CPU in 3 s", used);
}

// The spin settings are each context's own: a context created later with other HVD_SPIN_US /
// HVD_SPIN_YIELD values leaves an earlier one's (and its transport's) as they were.
void test_spin_policy_is_per_context(void **) {
    auto one_rank_context = [](const char *spin_us, const char *spin_yield) {
        setenv("HVD_SPIN_US", spin_us, 1);
        setenv("HVD_SPIN_YIELD", spin_yield, 1);
        hvd_unique_id_t id;
        assert_int_equal(hvd_get_unique_id(&id), HVD_OK);
        hvd_context_h ctx = nullptr;
        assert_int_equal(join_job(id, 0, 1, &ctx), HVD_OK);
        return ctx;
    };
    hvd_context_h sleeper = one_rank_context("0", "1");
    hvd_context_h spinner = one_rank_context("300", "0");
    unsetenv("HVD_SPIN_US");
    unsetenv("HVD_SPIN_YIELD");
    const hvd::transport::SpinPolicy &a = sleeper->ctx->spin_policy();
    const hvd::transport::SpinPolicy &b = spinner->ctx->spin_policy();
    assert_int_equal(a.window.count(), 0);
    assert_true(a.yield);
    assert_int_equal(b.window.count(), 300);
    assert_false(b.yield);
    // Both still complete ops: one with waiters that sleep at once, one with waiters that drive.
    for (hvd_context_h ctx : {sleeper, spinner}) {
        int32_t v = 5;
        int64_t shape = 1;
        hvd_tensor_t t;
        std::memset(&t, 0, sizeof t);
        t.data = &v;
        t.dtype = HVD_DTYPE_INT32;
        t.ndim = 1;
        t.shape = &shape;
        hvd_request_h req = nullptr;
        assert_int_equal(hvd_allreduce_enqueue(ctx, &t, &t, nullptr, &req), HVD_OK);
        assert_int_equal(hvd_request_wait(req, 10000), HVD_OK);
        assert_int_equal(hvd_request_release(req), HVD_OK);
        assert_int_equal(v, 5);
    }
    assert_int_equal(hvd_finalize(spinner), HVD_OK);
    assert_int_equal(hvd_finalize(sleeper), HVD_OK);
}

void test_bad_unique_id_rejected(void **) {
    hvd_init_params_t ip;
    std::memset(&ip, 0, sizeof ip);
    ip.field_mask = HVD_INIT_FIELD_RANK | HVD_INIT_FIELD_UNIQUE_ID;
    ip.rank = 0;
    ip.size = 2;
    hvd_context_h ctx;
    assert_int_equal(hvd_init(&ip, &ctx), HVD_ERR_INVALID_ARG);
    ip.field_mask |= HVD_BIT(40);
    assert_int_equal(hvd_init(&ip, &ctx), HVD_ERR_UNSUPPORTED);
}

// The GPU layer's fields (a CUDA stream, a ready event) on host tensors are refused by name,
// not ignored, on every collective, and nothing is queued.
void test_gpu_fields_refused(void **) {
    inprocess_job::run_on_ranks(1, [](const hvd_unique_id_t &id, int32_t rank, int32_t size) {
        hvd_context_h ctx;
        if (join_job(id, rank, size, &ctx) != HVD_OK) return std::string("init failed");
        std::string err;
        float a[4] = {0};
        int64_t shape[1] = {4};
        hvd_tensor_t t = tensor(a, HVD_DTYPE_FLOAT32, 1, shape);
        hvd_op_params_t p;
        std::memset(&p, 0, sizeof p);
        p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_STREAM;
        p.name = "gpu.stream";
        p.stream = &p;
        auto refused = [&](hvd_status_t st, const char *what, const char *text) {
            char detail[256] = "";
            hvd_last_error(detail, sizeof detail);
            if (st != HVD_ERR_INVALID_ARG)
                err += std::string(what) + ": " + hvd_status_name(st) + "; ";
            else if (std::strstr(detail, text) == nullptr || !std::strstr(detail, "CUDA tensors"))
                err += std::string(what) + ": detail '" + detail + "'; ";
        };
        hvd_request_h req = nullptr;
        refused(hvd_allreduce_enqueue(ctx, &t, &t, &p, &req), "allreduce stream",
                "HVD_OP_FIELD_STREAM");
        refused(hvd_broadcast_enqueue(ctx, &t, &t, &p, &req), "broadcast stream",
                "HVD_OP_FIELD_STREAM");
        refused(hvd_allgather_enqueue(ctx, &t, &p, &req), "allgather stream",
                "HVD_OP_FIELD_STREAM");
        hvd_tensor_t ev = t;
        ev.field_mask = HVD_TENSOR_FIELD_READY_EVENT;
        ev.ready_event = &ev;
        refused(hvd_allreduce_enqueue(ctx, &ev, &ev, nullptr, &req), "allreduce ready event",
                "HVD_TENSOR_FIELD_READY_EVENT");
        if (req != nullptr) err += "a request was written; ";
        // The context still works: nothing was queued.
        if (hvd_allreduce_enqueue(ctx, &t, &t, nullptr, &req) != HVD_OK ||
            hvd_request_wait(req, 30000) != HVD_OK)
            err += "allreduce after the refusals failed; ";
        else
            hvd_request_release(req);
        hvd_finalize(ctx);
        return err;
    });
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_unique_id_rejected),
        cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_two_ranks),
        cmocka_unit_test(test_three_ranks),
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_small_tensors_are_fused),
        cmocka_unit_test(test_one_rank_fused_allreduce_scales),
        cmocka_unit_test(test_allgathers_and_reducescatters_are_fused),
        cmocka_unit_test(test_zero_fusion_threshold_disables_fusion),
        cmocka_unit_test(test_cycle_time_batches_ops_for_fusion),
        cmocka_unit_test(test_config_values_and_errors),
        cmocka_unit_test(test_idle_engine_uses_no_cpu),
        cmocka_unit_test(test_spin_policy_is_per_context),
        cmocka_unit_test(test_gpu_fields_refused),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
