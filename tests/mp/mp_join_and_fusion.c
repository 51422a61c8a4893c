/* SPDX-License-Identifier: Apache-2.0 */
/* Join (uneven steps, other collectives refused while joined), Adasum, grouped ops and the
 * layouts of fused runs on the ranks hvdrun started, against references computed here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mp_check.h"

/* Rank r runs r + 1 steps, then joins: joined ranks contribute zeros, Average divides by the
 * full size, and the join reports the last rank to join (the one with the most steps). */
static void test_join_uneven_steps(void **state) {
    (void)state;
    for (int32_t step = 0; step <= mp_rank; ++step) {
        double g[5];
        for (int i = 0; i < 5; ++i)
            g[i] = (mp_rank + 1) * (i + 1);
        int64_t shape[1] = {5};
        hvd_tensor_t t = mp_tensor(g, HVD_DTYPE_FLOAT64, 1, shape);
        char name[32];
        snprintf(name, sizeof name, "join.step.%d", step);
        hvd_op_params_t p = mp_reduce_params(name, HVD_OP_AVERAGE);
        hvd_request_h req;
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
        assert_int_equal(mp_wait(req), HVD_OK);
        hvd_request_release(req);
        double active = 0; /* ranks still stepping: r >= step */
        for (int32_t r = step; r < mp_size; ++r)
            active += r + 1;
        for (int i = 0; i < 5; ++i)
            if (fabs(g[i] - active * (i + 1) / mp_size) > 1e-12)
                mp_die("join step %d: element %d is %g, expected %g", step, i, g[i],
                       active * (i + 1) / mp_size);
    }
    hvd_request_h join;
    assert_int_equal(hvd_join_enqueue(mp_ctx, NULL, &join), HVD_OK);
    assert_int_equal(mp_wait(join), HVD_OK);
    int64_t last = -1;
    assert_int_equal(hvd_request_value(join, &last), HVD_OK);
    assert_int_equal(last, mp_size - 1);
    hvd_request_release(join);
}

/* While rank 0 is joined, an allgather fails on the ranks that enqueued it. */
static void test_join_blocks_other_collectives(void **state) {
    (void)state;
    hvd_request_h join, req;
    if (mp_rank == 0) assert_int_equal(hvd_join_enqueue(mp_ctx, NULL, &join), HVD_OK);
    if (mp_rank != 0) {
        int32_t v[2] = {mp_rank, mp_rank};
        int64_t shape[1] = {2};
        hvd_tensor_t t = mp_tensor(v, HVD_DTYPE_INT32, 1, shape);
        hvd_op_params_t p = mp_params(NULL);
        p.field_mask = HVD_OP_FIELD_NAME;
        p.name = "gather.while.joined";
        assert_int_equal(hvd_allgather_enqueue(mp_ctx, &t, &p, &req), HVD_OK);
        assert_int_equal(mp_wait(req), HVD_ERR_INVALID_ARG);
        char msg[256];
        hvd_request_message(req, msg, sizeof msg);
        assert_non_null(strstr(msg, "rank 0 has joined"));
        hvd_request_release(req);
        assert_int_equal(hvd_join_enqueue(mp_ctx, NULL, &join), HVD_OK);
    }
    assert_int_equal(mp_wait(join), HVD_OK);
    hvd_request_release(join);
}

/* Adasum on every power-of-two size, against the published pairwise formula evaluated here
 * in float64 over the same tree: level 1 combines ranks (0,1), (2,3); level 2 the results. */
static void adasum_pair(const double *a, const double *b, double *out, int n) {
    double dot = 0, na = 0, nb = 0;
    for (int i = 0; i < n; ++i)
        dot += a[i] * b[i], na += a[i] * a[i], nb += b[i] * b[i];
    double ca = na >= 1e-8 ? 1 - dot / (2 * na) : 1, cb = nb >= 1e-8 ? 1 - dot / (2 * nb) : 1;
    for (int i = 0; i < n; ++i)
        out[i] = ca * a[i] + cb * b[i];
}

static void test_adasum(void **state) {
    (void)state;
    if (mp_size == 3 || mp_size > 4) { /* v holds up to 4 ranks */
        skip();
        return;
    }
    enum { N = 6 };
    double v[4][N];
    for (int r = 0; r < mp_size; ++r)
        for (int i = 0; i < N; ++i)
            v[r][i] = (r + 1) * (i % 3 + 1) + (r == i ? 2.0 : 0.0);
    double ref[N];
    if (mp_size == 1) {
        for (int i = 0; i < N; ++i)
            ref[i] = v[0][i];
    } else if (mp_size == 2) {
        adasum_pair(v[0], v[1], ref, N);
    } else {
        double left[N], right[N];
        adasum_pair(v[0], v[1], left, N);
        adasum_pair(v[2], v[3], right, N);
        adasum_pair(left, right, ref, N);
    }
    static const int32_t dtypes[] = {HVD_DTYPE_FLOAT64, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT16};
    for (int d = 0; d < 3; ++d) {
        unsigned char buf[N * 8];
        for (int i = 0; i < N; ++i)
            mp_set(dtypes[d], buf, (size_t)i, v[mp_rank][i]);
        int64_t shape[1] = {N};
        hvd_tensor_t t = mp_tensor(buf, dtypes[d], 1, shape);
        hvd_op_params_t p = mp_params(NULL);
        p.field_mask = HVD_OP_FIELD_REDUCE_OP;
        p.reduce_op = HVD_OP_ADASUM;
        hvd_request_h req;
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
        assert_int_equal(mp_wait(req), HVD_OK);
        hvd_request_release(req);
        double tol = dtypes[d] == HVD_DTYPE_FLOAT16 ? 2e-2 : 1e-5;
        for (int i = 0; i < N; ++i) {
            double got = mp_get(dtypes[d], buf, (size_t)i);
            if (fabs(got - ref[i]) > tol * (1 + fabs(ref[i])))
                mp_die("adasum %s element %d: %g, expected %g", mp_dtype_name(dtypes[d]), i, got,
                       ref[i]);
        }
    }
}

/* Grouped ops: three tensors of different dtypes and shapes in one unit, one handle. */
/* One grouped allreduce (always one fused op) of kLayoutTensors tensors over 800 KB, laid out
 * differently on each rank: back to back in one buffer, in place (the pieces are walked as one
 * part); a gap after every tensor, in place; out of place with the inputs back to back and the
 * outputs gapped after every fifth tensor (only some neighbours join). The ranks' walks then
 * differ while the op is the same; the gaps must stay untouched. Per dtype and op: once as
 * a grouped allreduce, once as separate allreduces (fused as they meet in the engine). */
enum { kLayoutTensors = 48, kLayoutGap = 16 };

static size_t layout_count(int k) {
    return 3000 + 61 * (size_t)k;
}

static void check_fused_layout(int32_t dtype, int32_t op, int round) {
    const int mode = mp_rank % 3;
    const size_t esz = mp_dtype_size(dtype);
    size_t total = 0;
    for (int k = 0; k < kLayoutTensors; ++k)
        total += layout_count(k) + kLayoutGap;
    char *in_buf = calloc(total, esz), *out_buf = calloc(total, esz);
    if (!in_buf || !out_buf) mp_die("out of memory");
    char *ins[kLayoutTensors], *outs[kLayoutTensors];
    size_t at_in = 0, at_out = 0, base = 0;
    for (int k = 0; k < kLayoutTensors; ++k) {
        ins[k] = in_buf + at_in * esz;
        outs[k] = mode == 2 ? out_buf + at_out * esz : ins[k];
        at_in += layout_count(k) + (mode == 1 ? kLayoutGap : 0);
        at_out += layout_count(k) + (k % 5 == 4 ? kLayoutGap : 0);
    }
    for (size_t i = 0; i < total; ++i) { /* sentinels everywhere, then the tensors */
        mp_set(dtype, in_buf, i, 7);
        mp_set(dtype, out_buf, i, 7);
    }
    for (int k = 0; k < kLayoutTensors; ++k, base += layout_count(k - 1))
        for (size_t i = 0; i < layout_count(k); ++i)
            mp_set(dtype, ins[k], i, mp_value(dtype, mp_rank, base + i));
    int64_t shapes[kLayoutTensors][1];
    hvd_tensor_t tin[kLayoutTensors], tout[kLayoutTensors];
    const hvd_tensor_t *pin[kLayoutTensors], *pout[kLayoutTensors];
    for (int k = 0; k < kLayoutTensors; ++k) {
        shapes[k][0] = (int64_t)layout_count(k);
        tin[k] = mp_tensor(ins[k], dtype, 1, shapes[k]);
        tout[k] = mp_tensor(outs[k], dtype, 1, shapes[k]);
        pin[k] = &tin[k];
        pout[k] = &tout[k];
    }
    char name[64];
    hvd_request_h req[kLayoutTensors];
    int n_req = 0;
    hvd_status_t s = HVD_OK;
    if (round == 0) { /* one grouped op */
        snprintf(name, sizeof name, "layouts.%d.%d", dtype, op);
        hvd_op_params_t p = mp_reduce_params(name, op);
        s = hvd_grouped_allreduce_enqueue(mp_ctx, pin, pout, kLayoutTensors, &p, &req[n_req++]);
    } else { /* one enqueue each, fused as they meet in the engine */
        for (int k = 0; k < kLayoutTensors && s == HVD_OK; ++k) {
            snprintf(name, sizeof name, "layouts.%d.%d.%d", dtype, op, k);
            hvd_op_params_t p = mp_reduce_params(name, op);
            s = hvd_allreduce_enqueue(mp_ctx, pin[k], pout[k], &p, &req[n_req++]);
        }
    }
    if (s != HVD_OK) mp_die("layouts enqueue: %s", hvd_status_name(s));
    for (int k = 0; k < n_req; ++k) {
        s = mp_wait(req[k]);
        hvd_request_release(req[k]);
        if (s != HVD_OK) mp_die("layouts: %s", hvd_status_name(s));
    }
    base = 0;
    for (int k = 0; k < kLayoutTensors; base += layout_count(k), ++k)
        for (size_t i = 0; i < layout_count(k); ++i) {
            double got = mp_get(dtype, outs[k], i), want = mp_reference(dtype, op, base + i);
            if (got != want)
                mp_die("layout %d, %s op %d round %d: tensor %d element %zu is %g, expected %g",
                       mode, mp_dtype_name(dtype), op, round, k, i, got, want);
        }
    /* Everything outside the outputs (and, out of place, outside the inputs) is untouched. */
    for (int b = 0; b < 2; ++b) {
        char *buf = b == 0 ? in_buf : out_buf;
        char *const *tensors = b == 0 ? ins : outs;
        if (mode != 2 && b == 1) continue; /* in place: the output buffer is unused */
        for (size_t i = 0; i < total; ++i) {
            int inside = 0;
            for (int k = 0; k < kLayoutTensors && !inside; ++k) {
                size_t first = (size_t)(tensors[k] - buf) / esz;
                inside = i >= first && i < first + layout_count(k);
            }
            if (!inside && mp_get(dtype, buf, i) != 7)
                mp_die("layout %d, %s: element %zu outside every tensor of the %s buffer changed",
                       mode, mp_dtype_name(dtype), i, b == 0 ? "input" : "output");
        }
    }
    free(in_buf);
    free(out_buf);
}

static void test_fused_layouts(void **state) {
    (void)state;
    const int32_t dtypes[2] = {HVD_DTYPE_FLOAT32, HVD_DTYPE_INT32};
    const int32_t ops[2] = {HVD_OP_SUM, HVD_OP_MAX};
    for (int d = 0; d < 2; ++d)
        for (int o = 0; o < 2; ++o)
            for (int round = 0; round < 2; ++round)
                check_fused_layout(dtypes[d], ops[o], round);
}

static void test_grouped(void **state) {
    (void)state;
    float a[3];
    int64_t b[2][2];
    double c[5];
    for (int i = 0; i < 3; ++i)
        a[i] = (float)(mp_rank + i);
    for (int i = 0; i < 4; ++i)
        b[i / 2][i % 2] = mp_rank * 10 + i;
    for (int i = 0; i < 5; ++i)
        c[i] = mp_rank * 0.5 + i;
    int64_t sa[1] = {3}, sb[2] = {2, 2}, sc[1] = {5};
    hvd_tensor_t ta = mp_tensor(a, HVD_DTYPE_FLOAT32, 1, sa);
    hvd_tensor_t tb = mp_tensor(b, HVD_DTYPE_INT64, 2, sb);
    hvd_tensor_t tc = mp_tensor(c, HVD_DTYPE_FLOAT64, 1, sc);
    const hvd_tensor_t *ins[3] = {&ta, &tb, &tc};
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = "grads";
    hvd_request_h req;
    assert_int_equal(hvd_grouped_allreduce_enqueue(mp_ctx, ins, ins, 3, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    int64_t rsum = (int64_t)mp_size * (mp_size - 1) / 2;
    for (int i = 0; i < 3; ++i)
        assert_true(a[i] == (float)(rsum + mp_size * i));
    for (int i = 0; i < 4; ++i)
        assert_int_equal(b[i / 2][i % 2], rsum * 10 + mp_size * i);
    for (int i = 0; i < 5; ++i)
        assert_true(fabs(c[i] - (rsum * 0.5 + mp_size * i)) < 1e-12);
    hvd_tensor_t out;
    assert_int_equal(hvd_request_output(req, 1, &out), HVD_OK);
    assert_ptr_equal(out.data, b);
    assert_int_equal(hvd_request_output(req, 3, &out), HVD_ERR_INVALID_ARG);
    hvd_request_release(req);

    /* grouped allgather: member 0 ragged, member 1 fixed */
    int32_t rows = mp_rank % 2 + 1, g0[2] = {mp_rank, mp_rank}, g1[1] = {mp_rank};
    int64_t s0[1] = {rows}, s1[1] = {1};
    hvd_tensor_t t0 = mp_tensor(g0, HVD_DTYPE_INT32, 1, s0);
    hvd_tensor_t t1 = mp_tensor(g1, HVD_DTYPE_INT32, 1, s1);
    const hvd_tensor_t *gins[2] = {&t0, &t1};
    assert_int_equal(hvd_grouped_allgather_enqueue(mp_ctx, gins, 2, NULL, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
    int64_t total = 0;
    for (int32_t r = 0; r < mp_size; ++r)
        total += r % 2 + 1;
    assert_int_equal(out.shape[0], total);
    assert_int_equal(hvd_request_output(req, 1, &out), HVD_OK);
    assert_int_equal(out.shape[0], mp_size);
    for (int32_t r = 0; r < mp_size; ++r)
        assert_int_equal(((int32_t *)out.data)[r], r);
    hvd_request_release(req);

    /* grouped reducescatter of two tensors */
    int32_t r0[4] = {1, 2, 3, 4}, r1[2] = {5, 6};
    int64_t q0[1] = {4}, q1[1] = {2};
    hvd_tensor_t u0 = mp_tensor(r0, HVD_DTYPE_INT32, 1, q0);
    hvd_tensor_t u1 = mp_tensor(r1, HVD_DTYPE_INT32, 1, q1);
    const hvd_tensor_t *rins[2] = {&u0, &u1};
    assert_int_equal(hvd_grouped_reducescatter_enqueue(mp_ctx, rins, 2, NULL, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
    int64_t mine = 4 / mp_size + (mp_rank < 4 % mp_size ? 1 : 0);
    int64_t first = mp_rank * (4 / mp_size) + (mp_rank < 4 % mp_size ? mp_rank : 4 % mp_size);
    assert_int_equal(out.shape[0], mine);
    for (int64_t k = 0; k < mine; ++k)
        assert_int_equal(((int32_t *)out.data)[k], r0[first + k] * mp_size);
    hvd_request_release(req);
}

/* Tensors of a grouped allreduce share only memory they read: the same tensor twice in place,
 * or one's input inside another's output, is refused on every rank before anything runs; one
 * input read by two tensors into outputs of their own is reduced for both. */
static void test_grouped_shared_memory(void **state) {
    (void)state;
    float buf[8], out0[4], out1[4];
    for (int i = 0; i < 8; ++i)
        buf[i] = (float)(mp_rank + i);
    int64_t four[1] = {4};
    hvd_tensor_t x = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, four);
    hvd_tensor_t shifted = mp_tensor(buf + 3, HVD_DTYPE_FLOAT32, 1, four);
    hvd_tensor_t tail = mp_tensor(buf + 4, HVD_DTYPE_FLOAT32, 1, four);
    hvd_tensor_t o0 = mp_tensor(out0, HVD_DTYPE_FLOAT32, 1, four);
    hvd_tensor_t o1 = mp_tensor(out1, HVD_DTYPE_FLOAT32, 1, four);
    hvd_request_h req = NULL;
    char detail[512];
    const hvd_tensor_t *twice[2] = {&x, &x};
    assert_int_equal(hvd_grouped_allreduce_enqueue(mp_ctx, twice, twice, 2, NULL, &req),
                     HVD_ERR_INVALID_ARG);
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "member 1's tensor (in place)"));
    assert_non_null(strstr(detail, "member 0's tensor (in place)"));
    /* tensor 1 reads buf[3..7) out of place; tensor 0 writes buf[0..4) in place */
    const hvd_tensor_t *ins[2] = {&x, &shifted}, *outs[2] = {&x, &o1};
    assert_int_equal(hvd_grouped_allreduce_enqueue(mp_ctx, ins, outs, 2, NULL, &req),
                     HVD_ERR_INVALID_ARG);
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "member 1's input"));
    /* tensor 1 writes out of place where tensor 0 reads */
    ins[0] = &o0;
    outs[0] = &o1;
    ins[1] = &x;
    outs[1] = &o0;
    assert_int_equal(hvd_grouped_allreduce_enqueue(mp_ctx, ins, outs, 2, NULL, &req),
                     HVD_ERR_INVALID_ARG);
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "member 1's output"));
    assert_null(req);
    /* adjacent halves in place, and one input read twice into two outputs: allowed */
    const hvd_tensor_t *halves[2] = {&x, &tail};
    assert_int_equal(hvd_grouped_allreduce_enqueue(mp_ctx, halves, halves, 2, NULL, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    const float rsum = (float)(mp_size * (mp_size - 1) / 2);
    for (int i = 0; i < 8; ++i)
        assert_true(buf[i] == rsum + mp_size * i);
    const hvd_tensor_t *same[2] = {&x, &x}, *apart[2] = {&o0, &o1};
    assert_int_equal(hvd_grouped_allreduce_enqueue(mp_ctx, same, apart, 2, NULL, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    for (int i = 0; i < 4; ++i) {
        assert_true(out0[i] == mp_size * (rsum + mp_size * i));
        assert_true(out1[i] == out0[i]);
    }
}

int main(void) {
    mp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_uneven_steps),
        cmocka_unit_test(test_join_blocks_other_collectives),
        cmocka_unit_test(test_adasum),
        cmocka_unit_test(test_grouped),
        cmocka_unit_test(test_grouped_shared_memory),
        cmocka_unit_test(test_fused_layouts),
    };
    if (cmocka_run_group_tests(tests, NULL, NULL) != 0) return 1;
    mp_finalize();
    return 0;
}
