// SPDX-License-Identifier: Apache-2.0
// The response cache in jobs of 2-3 rank threads (its parts alone:
// test_response_cache_parts.cc): repeated ops run from the cache (counters equal on every
// rank, results exact), changed parameters renegotiate or fail as mismatches, capacity limits
// evict, joined ranks and a rank that falls far behind do not hang, grouped ops run from the
// cache together.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "counted_job.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace {

using inprocess_job::tensor;

// ------------------------------------------------------------------ jobs

using counted_job::ContextBody;
using counted_job::wait;

// Each rank's counters of the last job.
std::vector<counted_job::Counters> &g_counters = counted_job::counters();

// Runs body on every rank of a new job of `size` ranks and checks that the counters agree.
void run_counted(int32_t size, const ContextBody &body) {
    counted_job::run_recorded(size, body);
    // Rounds and coordinator batches run in one order on every rank: equal counts.
    for (int32_t r = 1; r < size; ++r) {
        assert_int_equal(g_counters[r].hits, g_counters[0].hits);
        assert_int_equal(g_counters[r].negotiated, g_counters[0].negotiated);
    }
}

hvd_op_params_t params(uint64_t fields) {
    hvd_op_params_t p;
    std::memset(&p, 0, sizeof p);
    p.field_mask = fields;
    return p;
}

// Allreduces t in place under `name` and waits: the enqueue's or the op's status.
hvd_status_t allreduce_named(hvd_context_h ctx, hvd_tensor_t *t, const char *name) {
    hvd_op_params_t p = params(HVD_OP_FIELD_NAME);
    p.name = name;
    hvd_request_h req;
    hvd_status_t s = hvd_allreduce_enqueue(ctx, t, t, &p, &req);
    return s != HVD_OK ? s : wait(req);
}

// One iteration of the five data collectives under fixed names, values depending on the
// iteration; each result is checked against a reference computed here.
std::string five_collectives(hvd_context_h ctx, int32_t rank, int32_t size, int it) {
    auto v = [it](int32_t r, int i) { return static_cast<float>(r * 100 + it * 7 + i); };
    // allreduce "grad" [17]
    std::vector<float> grad(17);
    for (int i = 0; i < 17; ++i)
        grad[i] = v(rank, i);
    int64_t gshape[1] = {17};
    hvd_tensor_t g = tensor(grad.data(), HVD_DTYPE_FLOAT32, 1, gshape);
    hvd_op_params_t named = params(HVD_OP_FIELD_NAME);
    named.name = "grad";
    hvd_request_h ar, ag, bc, a2a, rs;
    if (hvd_allreduce_enqueue(ctx, &g, &g, &named, &ar) != HVD_OK) return "allreduce enqueue";
    // allgather "rows": rank r gives r + 1 rows of 2
    std::vector<int32_t> rows(static_cast<size_t>(2 * (rank + 1)));
    for (size_t i = 0; i < rows.size(); ++i)
        rows[i] = rank * 1000 + it * 10 + static_cast<int32_t>(i);
    int64_t rshape[2] = {rank + 1, 2};
    hvd_tensor_t rt = tensor(rows.data(), HVD_DTYPE_INT32, 2, rshape);
    named.name = "rows";
    if (hvd_allgather_enqueue(ctx, &rt, &named, &ag) != HVD_OK) return "allgather enqueue";
    // broadcast "b" from the last rank
    double b[3] = {-1, -1, -1};
    if (rank == size - 1)
        for (int i = 0; i < 3; ++i)
            b[i] = it + i * 0.5;
    int64_t bshape[1] = {3};
    hvd_tensor_t bt = tensor(b, HVD_DTYPE_FLOAT64, 1, bshape);
    hvd_op_params_t bp = params(HVD_OP_FIELD_NAME | HVD_OP_FIELD_ROOT);
    bp.name = "b";
    bp.root_rank = size - 1;
    if (hvd_broadcast_enqueue(ctx, &bt, &bt, &bp, &bc) != HVD_OK) return "broadcast enqueue";
    // alltoall "x": one row to every rank, value sender*10 + receiver + it
    std::vector<int64_t> x(static_cast<size_t>(size));
    for (int32_t q = 0; q < size; ++q)
        x[q] = rank * 10 + q + it;
    int64_t xshape[1] = {size};
    hvd_tensor_t xt = tensor(x.data(), HVD_DTYPE_INT64, 1, xshape);
    std::vector<int32_t> ones(static_cast<size_t>(size), 1);
    hvd_op_params_t xp = params(HVD_OP_FIELD_NAME | HVD_OP_FIELD_SPLITS);
    xp.name = "x";
    xp.splits = ones.data();
    xp.num_splits = size;
    if (hvd_alltoall_enqueue(ctx, &xt, &xp, &a2a) != HVD_OK) return "alltoall enqueue";
    // reducescatter "rs": 2 * size elements, each rank gets 2
    std::vector<float> sc(static_cast<size_t>(2 * size));
    for (int i = 0; i < 2 * size; ++i)
        sc[i] = v(rank, i);
    int64_t sshape[1] = {2 * size};
    hvd_tensor_t st = tensor(sc.data(), HVD_DTYPE_FLOAT32, 1, sshape);
    named.name = "rs";
    if (hvd_reducescatter_enqueue(ctx, &st, &named, &rs) != HVD_OK) return "reducescatter enqueue";

    if (wait(ar) != HVD_OK) return "allreduce failed";
    for (int i = 0; i < 17; ++i) {
        float want = 0;
        for (int32_t r = 0; r < size; ++r)
            want += v(r, i);
        if (grad[i] != want) return "allreduce result wrong";
    }
    hvd_tensor_t out;
    if (hvd_request_wait(ag, 30000) != HVD_OK || hvd_request_output(ag, 0, &out) != HVD_OK)
        return "allgather failed";
    const int32_t *got = static_cast<const int32_t *>(out.data);
    size_t k = 0;
    for (int32_t r = 0; r < size; ++r)
        for (int32_t i = 0; i < 2 * (r + 1); ++i)
            if (got[k++] != r * 1000 + it * 10 + i) return "allgather result wrong";
    hvd_request_release(ag);
    if (wait(bc) != HVD_OK) return "broadcast failed";
    for (int i = 0; i < 3; ++i)
        if (b[i] != it + i * 0.5) return "broadcast result wrong";
    if (hvd_request_wait(a2a, 30000) != HVD_OK || hvd_request_output(a2a, 0, &out) != HVD_OK)
        return "alltoall failed";
    const int64_t *got64 = static_cast<const int64_t *>(out.data);
    for (int32_t q = 0; q < size; ++q)
        if (got64[q] != q * 10 + rank + it) return "alltoall result wrong";
    hvd_request_release(a2a);
    if (hvd_request_wait(rs, 30000) != HVD_OK || hvd_request_output(rs, 0, &out) != HVD_OK)
        return "reducescatter failed";
    const float *gotf = static_cast<const float *>(out.data);
    for (int i = 0; i < 2; ++i) {
        float want = 0;
        for (int32_t r = 0; r < size; ++r)
            want += v(r, 2 * rank + i);
        if (gotf[i] != want) return "reducescatter result wrong";
    }
    hvd_request_release(rs);
    return "";
}

constexpr int kIterations = 20;

void test_repeated_ops_run_from_the_cache(void **) {
    for (int32_t size : {2, 3}) {
        run_counted(size, [](hvd_context_h ctx, int32_t rank, int32_t n) {
            std::string err;
            for (int it = 0; it < kIterations && err.empty(); ++it)
                err = five_collectives(ctx, rank, n, it);
            return err;
        });
        // The first iteration is negotiated; a later op misses only if a rank fell 1 s
        // behind (then the coordinator takes it over).
        if (g_counters[0].hits < 5 * (kIterations - 1) - 10 || g_counters[0].negotiated > 15)
            fail_msg("%d ranks: %llu cache hits, %llu negotiated of %d ops", size,
                     static_cast<unsigned long long>(g_counters[0].hits),
                     static_cast<unsigned long long>(g_counters[0].negotiated), 5 * kIterations);
    }
}

// Allreduce "w" whose shape changes every third iteration (each change renegotiates), and at
// iteration 7 rank 1 alone changes its dtype: a mismatch error on every rank, not a hang;
// the op after it works again.
void test_changed_parameters_renegotiate(void **) {
    run_counted(2, [](hvd_context_h ctx, int32_t rank, int32_t n) {
        std::string err;
        for (int it = 0; it < 12 && err.empty(); ++it) {
            int64_t len = 4 + (it / 3) % 2;
            std::vector<double> d(static_cast<size_t>(len));
            for (int64_t i = 0; i < len; ++i)
                d[i] = rank + it + static_cast<double>(i);
            int64_t shape[1] = {len};
            bool odd_one_out = it == 7 && rank == 1;
            hvd_tensor_t t =
                tensor(d.data(), odd_one_out ? HVD_DTYPE_FLOAT32 : HVD_DTYPE_FLOAT64, 1, shape);
            hvd_status_t s = allreduce_named(ctx, &t, "w");
            if (it == 7) {
                if (s != HVD_ERR_MISMATCH) err = "iteration 7: expected a mismatch";
                continue;
            }
            if (s != HVD_OK) err = "allreduce failed at iteration " + std::to_string(it);
            for (int64_t i = 0; i < len && err.empty(); ++i)
                if (d[i] != 1 + 2 * (it + static_cast<double>(i))) err = "result wrong";
        }
        return err;
    });
    assert_true(g_counters[0].hits >= 4);
}

// Rank 0 sets the capacity: 0 turns the cache off; 2 with five names in turn evicts on every
// op (and nothing may go wrong).
void run_with_capacity(int32_t size, double capacity) {
    run_counted(size, [capacity](hvd_context_h ctx, int32_t rank, int32_t n) {
        if (hvd_config_set(ctx, HVD_CONFIG_CACHE_CAPACITY, capacity) != HVD_OK)
            return std::string("setting the capacity failed");
        std::string err;
        static const char *kNames[] = {"n0", "n1", "n2", "n3", "n4"};
        for (int it = 0; it < 30 && err.empty(); ++it) {
            int32_t value = rank * 3 + it;
            int64_t shape[1] = {1};
            hvd_tensor_t t = tensor(&value, HVD_DTYPE_INT32, 1, shape);
            if (allreduce_named(ctx, &t, kNames[it % 5]) != HVD_OK)
                err = "allreduce failed";
            else if (value != 3 * n * (n - 1) / 2 + n * it)
                err = "result wrong";
        }
        return err;
    });
}

void test_capacity_zero_turns_the_cache_off(void **) {
    run_with_capacity(2, 0);
    assert_int_equal(g_counters[0].hits, 0);
    assert_int_equal(g_counters[0].negotiated, 30);
}

void test_small_capacity_evicts(void **) {
    run_with_capacity(3, 2);
    assert_int_equal(g_counters[0].hits, 0);  // every name was evicted before its next use
    run_with_capacity(3, 5);
    assert_true(g_counters[0].hits >= 20);
}

// Uneven batches: rank r runs 8 + 3r cached allreduces, then joins; ranks that joined take
// part with zeros (the coordinator takes over from the cache while anyone is joined).
void test_join_with_cached_ops(void **) {
    run_counted(3, [](hvd_context_h ctx, int32_t rank, int32_t n) {
        std::string err;
        int mine = 8 + 3 * rank;
        for (int it = 0; it < mine && err.empty(); ++it) {
            float value = static_cast<float>(rank + 1) * 100 + it;
            int64_t shape[1] = {1};
            hvd_tensor_t t = tensor(&value, HVD_DTYPE_FLOAT32, 1, shape);
            if (allreduce_named(ctx, &t, "step") != HVD_OK) {
                err = "allreduce failed at iteration " + std::to_string(it);
                break;
            }
            float want = 0;
            for (int32_t r = 0; r < n; ++r)
                if (it < 8 + 3 * r) want += static_cast<float>(r + 1) * 100 + it;
            if (value != want) err = "result wrong at iteration " + std::to_string(it);
        }
        if (!err.empty()) return err;
        hvd_request_h join;
        if (hvd_join_enqueue(ctx, nullptr, &join) != HVD_OK) return std::string("join enqueue");
        int64_t last = -1;
        if (hvd_request_wait(join, 30000) != HVD_OK || hvd_request_value(join, &last) != HVD_OK ||
            last != n - 1)
            err = "join failed";
        hvd_request_release(join);
        return err;
    });
}

// Rank 1 enqueues a cached op 1.5 s after rank 0: rank 0's cached wait is handed to the
// coordinator; the op completes, and the cache works again afterwards.
void test_slow_rank_falls_back_to_the_coordinator(void **) {
    run_counted(2, [](hvd_context_h ctx, int32_t rank, int32_t n) {
        std::string err;
        for (int it = 0; it < 8 && err.empty(); ++it) {
            if (it == 3 && rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            int64_t value = rank + it;
            int64_t shape[1] = {1};
            hvd_tensor_t t = tensor(&value, HVD_DTYPE_INT64, 1, shape);
            if (allreduce_named(ctx, &t, "late") != HVD_OK)
                err = "allreduce failed at iteration " + std::to_string(it);
            else if (value != 1 + 2 * it)
                err = "result wrong";
        }
        return err;
    });
    assert_true(g_counters[0].hits >= 4);
}

// ------------------------------------------------------------------ grouped ops

constexpr int kGroupSize = 6;

// Options of one grouped step.
struct GroupStep {
    int64_t grow = 0;         // extra elements of member 2
    bool odd_dtype = false;   // member 4 as float64 instead of int32 (a mismatch on one rank)
    bool with_other = false;  // also an ungrouped allreduce "other", enqueued in between
};

// One grouped allreduce "grads" of kGroupSize members (even: float32 of 1 + 3k elements, odd:
// int32), in place; every result checked. The op's status, or HVD_ERR_INTERNAL for a wrong
// value.
hvd_status_t grouped_step(hvd_context_h ctx, int32_t rank, int32_t n, int it, GroupStep o) {
    std::vector<std::vector<float>> f(kGroupSize);
    std::vector<std::vector<int32_t>> i32(kGroupSize);
    std::vector<std::vector<double>> f64(kGroupSize);
    std::vector<int64_t> lens(kGroupSize);
    std::vector<hvd_tensor_t> ts(kGroupSize);
    std::vector<const hvd_tensor_t *> ptrs(kGroupSize);
    auto value = [it](int32_t r, int k, int64_t i) { return r * 10 + it + k + i; };
    for (int k = 0; k < kGroupSize; ++k) {
        lens[k] = 1 + 3 * k + (k == 2 ? o.grow : 0);
        const bool as_f64 = k == 3 && o.odd_dtype;
        void *data = nullptr;
        int32_t dtype = HVD_DTYPE_INT32;
        for (int64_t i = 0; i < lens[k]; ++i) {
            if (as_f64)
                f64[k].push_back(static_cast<double>(value(rank, k, i)));
            else if (k % 2 == 0)
                f[k].push_back(static_cast<float>(value(rank, k, i)));
            else
                i32[k].push_back(static_cast<int32_t>(value(rank, k, i)));
        }
        if (as_f64) {
            data = f64[k].data();
            dtype = HVD_DTYPE_FLOAT64;
        } else if (k % 2 == 0) {
            data = f[k].data();
            dtype = HVD_DTYPE_FLOAT32;
        } else {
            data = i32[k].data();
        }
        ts[k] = tensor(data, dtype, 1, &lens[k]);
        ptrs[k] = &ts[k];
    }
    hvd_op_params_t p = params(HVD_OP_FIELD_NAME);
    p.name = "grads";
    hvd_request_h req;
    hvd_status_t s =
        hvd_grouped_allreduce_enqueue(ctx, ptrs.data(), ptrs.data(), kGroupSize, &p, &req);
    if (s != HVD_OK) return s;
    if (o.with_other) {
        int32_t other = rank + it;
        int64_t one[1] = {1};
        hvd_tensor_t t = tensor(&other, HVD_DTYPE_INT32, 1, one);
        hvd_status_t so = allreduce_named(ctx, &t, "other");
        if (so != HVD_OK || other != n * (n - 1) / 2 + n * it) {
            fprintf(stderr, "rank %d step %d other: %s %d\n", rank, it, hvd_status_name(so), other);
            s = HVD_ERR_INTERNAL;
        }
    }
    hvd_status_t w = wait(req);
    if (w != HVD_OK) return w;
    for (int k = 0; k < kGroupSize; ++k)
        for (int64_t i = 0; i < lens[k]; ++i) {
            int64_t want = 10 * n * (n - 1) / 2 + n * (it + k + i);
            int64_t got = k % 2 == 0 ? static_cast<int64_t>(f[k][i]) : i32[k][i];
            if (got != want) {
                fprintf(stderr, "rank %d step %d member %d [%lld]: %lld, expected %lld\n", rank, it,
                        k, (long long)i, (long long)got, (long long)want);
                return HVD_ERR_INTERNAL;
            }
        }
    return s;
}

std::string grouped_steps(hvd_context_h ctx, int32_t rank, int32_t n, int steps,
                          const std::function<GroupStep(int)> &options) {
    for (int it = 0; it < steps; ++it) {
        hvd_status_t s = grouped_step(ctx, rank, n, it, options(it));
        if (s != HVD_OK) return "grouped step " + std::to_string(it) + ": " + hvd_status_name(s);
    }
    return "";
}

// A grouped op is cached like any other: its members run from the cache, together, from the
// second step on, also with an ungrouped op enqueued between the group and its wait.
void test_grouped_ops_run_from_the_cache(void **) {
    for (int32_t size : {2, 3}) {
        run_counted(size, [](hvd_context_h ctx, int32_t rank, int32_t n) {
            return grouped_steps(ctx, rank, n, kIterations, [](int it) {
                return GroupStep{0, false, it % 3 == 0};
            });
        });
        // 6 members a step and "other" every third step; a rank 1 s behind may send a step's
        // ops to the coordinator.
        const uint64_t ops = kGroupSize * kIterations + (kIterations + 2) / 3;
        if (g_counters[0].hits < ops - kGroupSize - 2 - 14 || g_counters[0].negotiated > 2 + 14)
            fail_msg("%d ranks: %llu cache hits, %llu negotiated of %llu ops", size,
                     static_cast<unsigned long long>(g_counters[0].hits),
                     static_cast<unsigned long long>(g_counters[0].negotiated),
                     static_cast<unsigned long long>(ops));
    }
}

// Member 2 grows at step 8 (the group is negotiated again, then cached again); at step 12
// rank 1 alone gives member 3 another dtype: a mismatch for the whole group on every rank,
// not a hang, and the next step works.
void test_grouped_member_changes(void **) {
    run_counted(2, [](hvd_context_h ctx, int32_t rank, int32_t n) {
        for (int it = 0; it < 16; ++it) {
            GroupStep o{it >= 8 ? 5 : 0, it == 12 && rank == 1, false};
            hvd_status_t s = grouped_step(ctx, rank, n, it, o);
            if (s != (it == 12 ? HVD_ERR_MISMATCH : HVD_OK))
                return "grouped step " + std::to_string(it) + ": " + hvd_status_name(s);
        }
        return std::string();
    });
    assert_true(g_counters[0].hits >= 6 * kGroupSize);  // of 12 cacheable steps; 1 s stalls happen
}

// A capacity below the group's size: its members evict each other; a step may run from the
// cache only whole, and every step completes.
void test_grouped_with_small_capacity(void **) {
    for (double capacity : {4.0, 7.0}) {
        run_counted(3, [capacity](hvd_context_h ctx, int32_t rank, int32_t n) {
            if (hvd_config_set(ctx, HVD_CONFIG_CACHE_CAPACITY, capacity) != HVD_OK)
                return std::string("setting the capacity failed");
            return grouped_steps(ctx, rank, n, 12, [](int it) {
                return GroupStep{0, false, it % 2 == 1};
            });
        });
    }
}

// Rank 1 enqueues step 3's group 1.5 s after rank 0: rank 0's cached members are handed to
// the coordinator together; the group completes, and later steps are cached again.
void test_grouped_slow_rank(void **) {
    run_counted(2, [](hvd_context_h ctx, int32_t rank, int32_t n) {
        for (int it = 0; it < 8; ++it) {
            if (it == 3 && rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            hvd_status_t s = grouped_step(ctx, rank, n, it, GroupStep{});
            if (s != HVD_OK)
                return "grouped step " + std::to_string(it) + ": " + hvd_status_name(s);
        }
        return std::string();
    });
    assert_true(g_counters[0].hits >= 3 * kGroupSize);  // of 6 cacheable steps; 1 s stalls happen
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeated_ops_run_from_the_cache),
        cmocka_unit_test(test_changed_parameters_renegotiate),
        cmocka_unit_test(test_capacity_zero_turns_the_cache_off),
        cmocka_unit_test(test_small_capacity_evicts),
        cmocka_unit_test(test_join_with_cached_ops),
        cmocka_unit_test(test_slow_rank_falls_back_to_the_coordinator),
        cmocka_unit_test(test_grouped_ops_run_from_the_cache),
        cmocka_unit_test(test_grouped_member_changes),
        cmocka_unit_test(test_grouped_with_small_capacity),
        cmocka_unit_test(test_grouped_slow_rank),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
