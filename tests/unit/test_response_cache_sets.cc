// SPDX-License-Identifier: Apache-2.0
// The response cache in process sets, in jobs of 2-4 rank threads: each set has a cache of
// its own (ops of a set run from it, results exact, hits counted on its members only, the
// same name in several sets kept apart), sets overlap, rank 0 need not be a member, a rank
// may be in no set but the global one; a changed shape in a set renegotiates and a shape one
// member alone changes fails as a mismatch; destroying a set while its ops are cached and
// waiting fails those ops and leaves later sets working; grouped ops of a set run from the
// cache; a join in a set suspends that set's cache only.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "counted_job.h"
#include "hvd/hvd.h"
#include "inprocess_job.h"

namespace {

using inprocess_job::tensor;

using counted_job::run_recorded;
using counted_job::wait;

// Each rank's counters of the last job.
std::vector<counted_job::Counters> &g_counters = counted_job::counters();

hvd_op_params_t in_set(hvd_process_set_h ps, const char *name) {
    hvd_op_params_t p;
    std::memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME | (ps != nullptr ? HVD_OP_FIELD_PROCESS_SET : 0);
    p.name = name;
    p.process_set = ps;
    return p;
}

// A process set as every rank creates it, and this rank's place in it.
struct Set {
    std::vector<int32_t> ranks;
    hvd_process_set_h handle = nullptr;
    int32_t my_index = -1;  // -1: not a member
};

std::string create_sets(hvd_context_h ctx, int32_t rank, std::vector<Set> *sets) {
    for (Set &s : *sets) {
        if (hvd_process_set_create(ctx, s.ranks.data(), static_cast<int32_t>(s.ranks.size()),
                                   &s.handle) != HVD_OK)
            return "process set create failed";
        auto it = std::find(s.ranks.begin(), s.ranks.end(), rank);
        s.my_index = it == s.ranks.end() ? -1 : static_cast<int32_t>(it - s.ranks.begin());
    }
    return "";
}

// The sets of a job of `size` ranks: 2: the whole job as a set of its own; 3: {0,1} and
// {1,2} (rank 1 in both); 4: {0,1}, {1,2} and {1,2,3} (rank 0 outside the last two, rank 3
// in the last only).
std::vector<Set> layout(int32_t size) {
    if (size == 2) return {Set{{0, 1}}};
    if (size == 3) return {Set{{0, 1}}, Set{{1, 2}}};
    return {Set{{0, 1}}, Set{{1, 2}}, Set{{1, 2, 3}}};
}

// Ops of one step on a rank: the global "w", and per set it is in "w", "v" and "rows".
uint64_t ops_per_step(const std::vector<Set> &sets) {
    uint64_t n = 1;
    for (const Set &s : sets)
        n += s.my_index >= 0 ? 3 : 0;
    return n;
}

// Per set it is in: allreduces "w" (int32 [3 + k]) and "v" (int32 [2], fused with "w") and
// allgather "rows" (member i gives i + 1 rows of 2); and the global allreduce "w" (float32
// [5]). All enqueued first (the sets' ops and the global one interleave in the rounds), then
// each result checked against its reference.
std::string set_step(hvd_context_h ctx, int32_t rank, int32_t size, std::vector<Set> &sets,
                     int it) {
    struct Mine {
        std::vector<int32_t> w, v, rows;
        int64_t wshape[1], vshape[1], rshape[2];
        hvd_tensor_t wt, vt, rt;
        hvd_request_h wr = nullptr, vr = nullptr, rr = nullptr;
    };
    std::vector<Mine> mine(sets.size());
    std::vector<float> g(5);
    for (int i = 0; i < 5; ++i)
        g[i] = static_cast<float>(rank * 10 + it + i);
    int64_t gshape[1] = {5};
    hvd_tensor_t gt = tensor(g.data(), HVD_DTYPE_FLOAT32, 1, gshape);
    hvd_op_params_t gp = in_set(nullptr, "w");
    hvd_request_h gr;
    if (hvd_allreduce_enqueue(ctx, &gt, &gt, &gp, &gr) != HVD_OK) return "global enqueue";
    for (size_t k = 0; k < sets.size(); ++k) {
        const Set &s = sets[k];
        if (s.my_index < 0) continue;
        Mine &m = mine[k];
        const int32_t kk = static_cast<int32_t>(k);
        m.w.resize(3 + k);
        for (size_t i = 0; i < m.w.size(); ++i)
            m.w[i] = rank * 100 + it + static_cast<int32_t>(i) + kk;
        m.v = {rank + it, rank * 2 + kk};
        m.rows.resize(static_cast<size_t>(2 * (s.my_index + 1)));
        for (size_t i = 0; i < m.rows.size(); ++i)
            m.rows[i] = rank * 1000 + it * 10 + static_cast<int32_t>(i);
        m.wshape[0] = static_cast<int64_t>(m.w.size());
        m.vshape[0] = 2;
        m.rshape[0] = s.my_index + 1;
        m.rshape[1] = 2;
        m.wt = tensor(m.w.data(), HVD_DTYPE_INT32, 1, m.wshape);
        m.vt = tensor(m.v.data(), HVD_DTYPE_INT32, 1, m.vshape);
        m.rt = tensor(m.rows.data(), HVD_DTYPE_INT32, 2, m.rshape);
        hvd_op_params_t p = in_set(s.handle, "w");
        if (hvd_allreduce_enqueue(ctx, &m.wt, &m.wt, &p, &m.wr) != HVD_OK) return "w enqueue";
        p.name = "v";
        if (hvd_allreduce_enqueue(ctx, &m.vt, &m.vt, &p, &m.vr) != HVD_OK) return "v enqueue";
        p.name = "rows";
        if (hvd_allgather_enqueue(ctx, &m.rt, &p, &m.rr) != HVD_OK) return "rows enqueue";
    }
    std::string where = " (step " + std::to_string(it) + ")";
    if (wait(gr) != HVD_OK) return "global allreduce failed" + where;
    for (int i = 0; i < 5; ++i)
        if (g[i] != static_cast<float>(10 * size * (size - 1) / 2 + size * (it + i)))
            return "global allreduce result wrong" + where;
    for (size_t k = 0; k < sets.size(); ++k) {
        const Set &s = sets[k];
        if (s.my_index < 0) continue;
        Mine &m = mine[k];
        const int32_t kk = static_cast<int32_t>(k);
        const int32_t n = static_cast<int32_t>(s.ranks.size());
        int32_t rank_sum = 0;
        for (int32_t r : s.ranks)
            rank_sum += r;
        std::string in = " in set " + std::to_string(k) + where;
        if (wait(m.wr) != HVD_OK) return "w failed" + in;
        for (size_t i = 0; i < m.w.size(); ++i)
            if (m.w[i] != 100 * rank_sum + n * (it + static_cast<int32_t>(i) + kk))
                return "w result wrong" + in;
        if (wait(m.vr) != HVD_OK) return "v failed" + in;
        if (m.v[0] != rank_sum + n * it || m.v[1] != 2 * rank_sum + n * kk)
            return "v result wrong" + in;
        hvd_tensor_t out;
        if (hvd_request_wait(m.rr, 30000) != HVD_OK || hvd_request_output(m.rr, 0, &out) != HVD_OK)
            return "rows failed" + in;
        const int32_t *got = static_cast<const int32_t *>(out.data);
        size_t at = 0;
        for (int32_t i = 0; i < n; ++i)
            for (int32_t j = 0; j < 2 * (i + 1); ++j)
                if (got[at++] != s.ranks[i] * 1000 + it * 10 + j) {
                    hvd_request_release(m.rr);
                    return "rows result wrong" + in;
                }
        hvd_request_release(m.rr);
    }
    return "";
}

constexpr int kSteps = 20;
// Ops a rank more than 1 s behind hands to the coordinator, at most, in these short jobs.
constexpr uint64_t kSlack = 12;

void test_set_ops_run_from_the_cache(void **) {
    for (int32_t size : {2, 3, 4}) {
        std::vector<uint64_t> ops(static_cast<size_t>(size));
        run_recorded(size, [&ops](hvd_context_h ctx, int32_t rank, int32_t n) {
            std::vector<Set> sets = layout(n);
            std::string err = create_sets(ctx, rank, &sets);
            ops[rank] = ops_per_step(sets);
            for (int it = 0; it < kSteps && err.empty(); ++it)
                err = set_step(ctx, rank, n, sets, it);
            return err;
        });
        // The first step is negotiated (and the creates), the later ones run from the caches.
        for (int32_t r = 0; r < size; ++r) {
            const uint64_t cacheable = ops[r] * (kSteps - 1);
            if (g_counters[r].hits + kSlack < cacheable ||
                g_counters[r].negotiated > ops[r] + layout(size).size() + kSlack)
                fail_msg("%d ranks, rank %d: %llu cache hits, %llu negotiated of %llu ops", size, r,
                         static_cast<unsigned long long>(g_counters[r].hits),
                         static_cast<unsigned long long>(g_counters[r].negotiated),
                         static_cast<unsigned long long>(ops[r] * kSteps));
            if (g_counters[r].hits > cacheable) fail_msg("rank %d: more hits than ops", r);
        }
    }
}

// Allreduce "w" in the set {1,2} of 3 ranks (rank 0 outside: it chooses the bits, the
// members hold them) beside a global "w" of a fixed shape: the set's shape changes every
// third step on both members (renegotiated, cached again), and at step 7 rank 2 alone adds
// an element: a mismatch naming the shapes on both members, not a hang; later steps work.
void test_changed_shape_in_a_set(void **) {
    run_recorded(3, [](hvd_context_h ctx, int32_t rank, int32_t) {
        std::vector<Set> sets{Set{{1, 2}}};
        std::string err = create_sets(ctx, rank, &sets);
        for (int it = 0; it < 12 && err.empty(); ++it) {
            int32_t g[4] = {rank, it, 1, 2};
            int64_t gshape[1] = {4};
            hvd_tensor_t gt = tensor(g, HVD_DTYPE_INT32, 1, gshape);
            hvd_op_params_t gp = in_set(nullptr, "w");
            hvd_request_h gr;
            if (hvd_allreduce_enqueue(ctx, &gt, &gt, &gp, &gr) != HVD_OK) return std::string("g");
            hvd_status_t s = HVD_OK;
            int64_t len = 4 + (it / 3) % 2 + (it == 7 && rank == 2 ? 1 : 0);
            std::vector<double> d(static_cast<size_t>(len));
            if (sets[0].my_index >= 0) {
                for (int64_t i = 0; i < len; ++i)
                    d[i] = rank + it + static_cast<double>(i);
                hvd_tensor_t t = tensor(d.data(), HVD_DTYPE_FLOAT64, 1, &len);
                hvd_op_params_t p = in_set(sets[0].handle, "w");
                hvd_request_h req;
                s = hvd_allreduce_enqueue(ctx, &t, &t, &p, &req);
                if (s == HVD_OK) s = wait(req);
            }
            std::string where = " at step " + std::to_string(it);
            if (it == 7 && sets[0].my_index >= 0) {
                char msg[512];
                hvd_last_error(msg, sizeof msg);
                if (s != HVD_ERR_MISMATCH || std::strstr(msg, "'w'") == nullptr ||
                    std::strstr(msg, "shape") == nullptr || std::strstr(msg, "rank 2") == nullptr)
                    err = std::string("expected a shape mismatch of rank 2, got ") +
                          hvd_status_name(s) + ": " + msg;
            } else if (s != HVD_OK) {
                err = "set allreduce failed" + where;
            } else {
                for (int64_t i = 0; i < len && sets[0].my_index >= 0 && err.empty(); ++i)
                    if (d[i] != 3 + 2 * (it + static_cast<double>(i))) err = "set result" + where;
            }
            if (wait(gr) != HVD_OK || g[0] != 3 || g[1] != 3 * it) err = "global failed" + where;
        }
        return err;
    });
    assert_int_equal(g_counters[1].hits, g_counters[2].hits);
    // Global: 11 of 12 cacheable. The set: steps 1-2, 4-5 and 10-11 (shape changes at 3, 6
    // and 9; step 7 fails and leaves the cache, so step 8 is negotiated).
    assert_true(g_counters[0].hits + kSlack >= 11 && g_counters[0].hits <= 11);
    assert_true(g_counters[1].hits + kSlack >= 11 + 6 && g_counters[1].hits <= 11 + 6);
}

// The set {1,2} of 3 ranks runs "w" from its cache; then rank 1 enqueues "w" again (a hit,
// waiting for rank 2, which never enqueues it) and every rank destroys the set: rank 1's op
// fails as destroyed, nothing hangs. A set created afterwards has a cache of its own.
void test_destroy_a_set_with_cached_and_waiting_ops(void **) {
    run_recorded(3, [](hvd_context_h ctx, int32_t rank, int32_t) {
        std::string err;
        for (int round = 0; round < 2 && err.empty(); ++round) {
            std::vector<Set> sets{Set{{1, 2}}};
            err = create_sets(ctx, rank, &sets);
            for (int it = 0; it < 6 && err.empty() && sets[0].my_index >= 0; ++it) {
                int64_t x = rank * 10 + it + round;
                int64_t shape[1] = {1};
                hvd_tensor_t t = tensor(&x, HVD_DTYPE_INT64, 1, shape);
                hvd_op_params_t p = in_set(sets[0].handle, "w");
                hvd_request_h req;
                if (hvd_allreduce_enqueue(ctx, &t, &t, &p, &req) != HVD_OK || wait(req) != HVD_OK)
                    err = "set allreduce failed";
                else if (x != 30 + 2 * (it + round))
                    err = "set allreduce result wrong";
            }
            hvd_request_h left = nullptr;
            int64_t y = 1;
            int64_t shape[1] = {1};
            hvd_tensor_t t = tensor(&y, HVD_DTYPE_INT64, 1, shape);
            hvd_op_params_t p = in_set(sets[0].handle, "w");
            if (err.empty() && rank == 1 && hvd_allreduce_enqueue(ctx, &t, &t, &p, &left) != HVD_OK)
                err = "enqueue before the destroy failed";
            if (err.empty() && hvd_process_set_destroy(ctx, sets[0].handle) != HVD_OK)
                err = "destroy failed";
            if (left != nullptr) {
                char msg[512];
                hvd_status_t s = wait(left);
                hvd_last_error(msg, sizeof msg);
                if (err.empty() && (s != HVD_ERR_INVALID_ARG || !std::strstr(msg, "destroyed")))
                    err = std::string("the waiting op: ") + hvd_status_name(s) + ": " + msg;
            }
        }
        return err;
    });
    // Of 2 x 6 ops, the first of each set negotiated.
    assert_int_equal(g_counters[0].hits, 0);
    assert_true(g_counters[1].hits + kSlack >= 10 && g_counters[1].hits <= 10);
}

// A grouped allreduce of 4 members in the set {1,2,3} of 4 ranks, with a global allreduce
// "other" enqueued between the group and its wait every other step (on rank 0 alone too):
// the group runs from the set's cache, whole.
void test_grouped_ops_in_a_set(void **) {
    constexpr int kMembers = 4;
    run_recorded(4, [](hvd_context_h ctx, int32_t rank, int32_t) {
        std::vector<Set> sets{Set{{1, 2, 3}}};
        std::string err = create_sets(ctx, rank, &sets);
        const bool member = sets[0].my_index >= 0;
        for (int it = 0; it < kSteps && err.empty(); ++it) {
            std::vector<std::vector<float>> f(kMembers);
            std::vector<hvd_tensor_t> ts(kMembers);
            std::vector<const hvd_tensor_t *> ptrs(kMembers);
            std::vector<int64_t> lens(kMembers);
            for (int k = 0; k < kMembers; ++k) {
                lens[k] = 1 + 2 * k;
                for (int64_t i = 0; i < lens[k]; ++i)
                    f[k].push_back(static_cast<float>(rank * 10 + it + k + i));
                ts[k] = tensor(f[k].data(), HVD_DTYPE_FLOAT32, 1, &lens[k]);
                ptrs[k] = &ts[k];
            }
            hvd_op_params_t p = in_set(sets[0].handle, "grads");
            hvd_request_h group = nullptr;
            if (member && hvd_grouped_allreduce_enqueue(ctx, ptrs.data(), ptrs.data(), kMembers, &p,
                                                        &group) != HVD_OK)
                return std::string("group enqueue failed");
            if (it % 2 == 0) {
                int32_t other = rank + it;
                int64_t one[1] = {1};
                hvd_tensor_t t = tensor(&other, HVD_DTYPE_INT32, 1, one);
                hvd_op_params_t op = in_set(nullptr, "other");
                hvd_request_h req;
                if (hvd_allreduce_enqueue(ctx, &t, &t, &op, &req) != HVD_OK ||
                    wait(req) != HVD_OK || other != 6 + 4 * it)
                    err = "other failed at step " + std::to_string(it);
            }
            if (group == nullptr) continue;
            if (wait(group) != HVD_OK) return "group failed at step " + std::to_string(it);
            for (int k = 0; k < kMembers; ++k)
                for (int64_t i = 0; i < lens[k]; ++i)
                    if (f[k][i] != static_cast<float>(60 + 3 * (it + k + i)))
                        return "group result wrong at step " + std::to_string(it);
        }
        return err;
    });
    const uint64_t others = kSteps / 2 - 1;  // cacheable global ops
    assert_true(g_counters[0].hits + kSlack >= others && g_counters[0].hits <= others);
    for (int32_t r = 1; r < 4; ++r) {
        const uint64_t cacheable = others + kMembers * (kSteps - 1);
        if (g_counters[r].hits + kSlack < cacheable || g_counters[r].hits > cacheable)
            fail_msg("rank %d: %llu cache hits of %llu cacheable ops", r,
                     static_cast<unsigned long long>(g_counters[r].hits),
                     static_cast<unsigned long long>(cacheable));
    }
}

// In the set {1,2} of 3 ranks, rank 2 runs 5 cached allreduces and joins the set, rank 1 runs
// 8 and joins: while rank 2 is joined, rank 1's ops go to the coordinator and rank 2 takes
// part with zeros. A global allreduce every step, on every rank, stays cached throughout: a
// join suspends the cache of its own set only.
void test_join_in_a_set(void **) {
    run_recorded(3, [](hvd_context_h ctx, int32_t rank, int32_t) {
        std::vector<Set> sets{Set{{1, 2}}};
        std::string err = create_sets(ctx, rank, &sets);
        const int mine = rank == 1 ? 8 : rank == 2 ? 5 : 0;
        hvd_op_params_t jp;
        std::memset(&jp, 0, sizeof jp);
        jp.field_mask = HVD_OP_FIELD_PROCESS_SET;
        jp.process_set = sets[0].handle;
        hvd_request_h join = nullptr;
        for (int it = 0; it < 8 && err.empty(); ++it) {
            std::string where = " at step " + std::to_string(it);
            int32_t g = rank + it;
            int64_t one[1] = {1};
            hvd_tensor_t gt = tensor(&g, HVD_DTYPE_INT32, 1, one);
            hvd_op_params_t gp = in_set(nullptr, "g");
            hvd_request_h gr;
            if (hvd_allreduce_enqueue(ctx, &gt, &gt, &gp, &gr) != HVD_OK) return "g" + where;
            hvd_op_params_t p = in_set(sets[0].handle, "step");
            float x = static_cast<float>((rank + 1) * 100 + it);
            hvd_tensor_t xt = tensor(&x, HVD_DTYPE_FLOAT32, 1, one);
            hvd_request_h xr = nullptr;
            if (it < mine && hvd_allreduce_enqueue(ctx, &xt, &xt, &p, &xr) != HVD_OK)
                return "step enqueue" + where;
            if (it == mine && mine > 0 && hvd_join_enqueue(ctx, &jp, &join) != HVD_OK)
                return "join enqueue" + where;
            if (xr != nullptr) {
                float want = 200 + static_cast<float>(it) + (it < 5 ? 300 + it : 0);
                if (wait(xr) != HVD_OK || x != want) err = "set allreduce wrong" + where;
            }
            if (wait(gr) != HVD_OK || g != 3 + 3 * it) err = "global allreduce wrong" + where;
        }
        if (rank == 1 && err.empty() && hvd_join_enqueue(ctx, &jp, &join) != HVD_OK)
            err = "join enqueue";
        int64_t last = -1;
        if (join != nullptr && err.empty() &&
            (hvd_request_wait(join, 30000) != HVD_OK || hvd_request_value(join, &last) != HVD_OK ||
             last != 0))
            err = "join failed or wrong last rank " + std::to_string(last);
        if (join != nullptr) hvd_request_release(join);
        return err;
    });
    // The global op: 7 of 8 cached on every rank. The set's: steps 1-4 on both members.
    for (int32_t r = 0; r < 3; ++r) {
        const uint64_t cacheable = 7 + (r > 0 ? 4 : 0);
        if (g_counters[r].hits + kSlack < cacheable || g_counters[r].hits > cacheable)
            fail_msg("rank %d: %llu cache hits of %llu cacheable ops", r,
                     static_cast<unsigned long long>(g_counters[r].hits),
                     static_cast<unsigned long long>(cacheable));
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_ops_run_from_the_cache),
        cmocka_unit_test(test_changed_shape_in_a_set),
        cmocka_unit_test(test_destroy_a_set_with_cached_and_waiting_ops),
        cmocka_unit_test(test_grouped_ops_in_a_set),
        cmocka_unit_test(test_join_in_a_set),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
