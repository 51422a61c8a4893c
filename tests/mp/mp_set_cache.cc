// SPDX-License-Identifier: Apache-2.0
// The response cache in process sets across processes (3-4 ranks): the sets {1..n-1} (rank 0
// outside; it still chooses the set's cache bits) and {0,1} (overlapping the first at rank 1)
// run allreduces and allgathers step after step, with a global allreduce every fifth step.
// Every result is checked, and each rank's engine must have run the repeated ops of its sets
// from the cache: it reads the hits from the engine, hence the internal archive.
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" {
#include "mp_check.h"
}

#include "capi/handles.h"

namespace {

constexpr int kSteps = 30;
// Ops a rank more than 1 s behind hands to the coordinator, at most.
constexpr int kSlack = 10;

struct Set {
    std::vector<int32_t> ranks;
    hvd_process_set_h handle = nullptr;
    int32_t my_index = -1;
};

hvd_request_h enqueue_allreduce(Set &s, const char *name, std::vector<float> *data,
                                int64_t *shape) {
    hvd_op_params_t p = mp_params(s.handle);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = name;
    shape[0] = static_cast<int64_t>(data->size());
    hvd_tensor_t t = mp_tensor(data->data(), HVD_DTYPE_FLOAT32, 1, shape);
    hvd_request_h req;
    if (hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req) != HVD_OK) mp_die("enqueue '%s'", name);
    return req;
}

// One step in set s: allreduce "w" (float32 [64]) and allgather "rows" (member i gives i + 1
// rows of 3), both checked.
void step_in_set(Set &s, int k, int it) {
    std::vector<float> w(64);
    for (size_t i = 0; i < w.size(); ++i)
        w[i] = static_cast<float>(mp_rank * 7 + it + k + static_cast<int>(i));
    int64_t wshape[1];
    hvd_request_h wr = enqueue_allreduce(s, "w", &w, wshape);
    std::vector<int32_t> rows(static_cast<size_t>(3 * (s.my_index + 1)));
    for (size_t i = 0; i < rows.size(); ++i)
        rows[i] = mp_rank * 1000 + it * 10 + static_cast<int32_t>(i);
    int64_t rshape[2] = {s.my_index + 1, 3};
    hvd_tensor_t rt = mp_tensor(rows.data(), HVD_DTYPE_INT32, 2, rshape);
    hvd_op_params_t p = mp_params(s.handle);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = "rows";
    hvd_request_h rr;
    if (hvd_allgather_enqueue(mp_ctx, &rt, &p, &rr) != HVD_OK) mp_die("enqueue 'rows'");
    if (mp_wait(wr) != HVD_OK) mp_die("set %d step %d: allreduce 'w' failed", k, it);
    hvd_request_release(wr);
    int32_t rank_sum = 0;
    for (int32_t r : s.ranks)
        rank_sum += r;
    const int n = static_cast<int>(s.ranks.size());
    for (size_t i = 0; i < w.size(); ++i)
        if (w[i] != static_cast<float>(7 * rank_sum + n * (it + k + static_cast<int>(i))))
            mp_die("set %d step %d: 'w'[%zu] = %g", k, it, i, static_cast<double>(w[i]));
    if (mp_wait(rr) != HVD_OK) mp_die("set %d step %d: allgather 'rows' failed", k, it);
    hvd_tensor_t out;
    if (hvd_request_output(rr, 0, &out) != HVD_OK) mp_die("allgather output");
    const int32_t *got = static_cast<const int32_t *>(out.data);
    size_t at = 0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < 3 * (i + 1); ++j)
            if (got[at++] != s.ranks[i] * 1000 + it * 10 + j)
                mp_die("set %d step %d: 'rows' wrong at member %d", k, it, i);
    hvd_request_release(rr);
}

}  // namespace

int main() {
    mp_init();
    if (mp_size < 3) mp_die("needs 3 ranks or more");
    std::vector<Set> sets(2);
    for (int32_t r = 1; r < mp_size; ++r)
        sets[0].ranks.push_back(r);
    sets[1].ranks = {0, 1};
    for (Set &s : sets) {
        if (hvd_process_set_create(mp_ctx, s.ranks.data(), static_cast<int32_t>(s.ranks.size()),
                                   &s.handle) != HVD_OK)
            mp_die("process set create");
        for (size_t i = 0; i < s.ranks.size(); ++i)
            if (s.ranks[i] == mp_rank) s.my_index = static_cast<int32_t>(i);
    }
    int in_sets = 0;
    for (int it = 0; it < kSteps; ++it) {
        in_sets = 0;
        for (size_t k = 0; k < sets.size(); ++k) {
            if (sets[k].my_index < 0) continue;
            ++in_sets;
            step_in_set(sets[k], static_cast<int>(k), it);
        }
        if (it % 5 != 0) continue;
        Set global;
        std::vector<float> g(8, static_cast<float>(mp_rank + it));
        int64_t gshape[1];
        hvd_request_h gr = enqueue_allreduce(global, "g", &g, gshape);
        if (mp_wait(gr) != HVD_OK) mp_die("step %d: global allreduce failed", it);
        hvd_request_release(gr);
        if (g[0] != static_cast<float>(mp_size * (mp_size - 1) / 2 + mp_size * it))
            mp_die("step %d: global allreduce result %g", it, static_cast<double>(g[0]));
    }
    const unsigned long long hits = mp_ctx->ctx->engine().cache_hits();
    // Two ops per set and step, the first step negotiated; the global op 5 of 6 times.
    const unsigned long long cacheable = 2ull * in_sets * (kSteps - 1) + (kSteps / 5 - 1);
    std::printf("rank %d: %llu cache hits of %llu cacheable ops (%d process sets)\n", mp_rank, hits,
                cacheable, in_sets);
    if (hits + kSlack < cacheable || hits > cacheable)
        mp_die("%llu cache hits, expected %llu (at most %d fewer)", hits, cacheable, kSlack);
    // Nobody finalizes (stopping its engine) while others still need its votes.
    hvd_request_h barrier;
    if (hvd_barrier_enqueue(mp_ctx, nullptr, &barrier) != HVD_OK || mp_wait(barrier) != HVD_OK)
        mp_die("barrier");
    hvd_request_release(barrier);
    mp_finalize();
    return 0;
}
