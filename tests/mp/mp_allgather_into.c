/* SPDX-License-Identifier: Apache-2.0 */
/* hvd_allgather_into_enqueue on the ranks hvdrun started: every dtype, in place and out of
 * place, ragged rows (a rank with none too), sizes on both sides of the shared-memory
 * single-copy and slot sizes, fused runs, repeats served by the response cache, gathers in
 * process sets; arguments rejected at enqueue, and outputs of the wrong size or misplaced
 * in-place inputs reported on every rank. Expected values come from the formula each rank
 * fills its rows with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mp_check.h"

static const int32_t kAllDtypes[] = {HVD_DTYPE_UINT8,   HVD_DTYPE_INT8,    HVD_DTYPE_UINT16,
                                     HVD_DTYPE_INT16,   HVD_DTYPE_INT32,   HVD_DTYPE_INT64,
                                     HVD_DTYPE_FLOAT16, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64,
                                     HVD_DTYPE_BOOL,    HVD_DTYPE_BFLOAT16};
static const int kNumDtypes = sizeof kAllDtypes / sizeof kAllDtypes[0];

enum { kCols = 3 };

/* Element k of rank r's rows in round `salt`: small integers, exact in every dtype. */
static double value(int32_t dtype, int32_t r, size_t k, int salt) {
    if (dtype == HVD_DTYPE_BOOL) return (double)((r + k + (size_t)salt) & 1);
    return (double)((r * 31 + (int)(k % 97) + salt * 7) % 100);
}

/* A layout: how many rows each rank contributes. */
typedef int64_t (*rows_fn)(int32_t r);
static int64_t ragged_rows(int32_t r) {
    return r % 3 + 1;
}
static int64_t none_on_rank0(int32_t r) {
    return r == 0 ? 0 : 2 * r + 1;
}
static int64_t large_rows(int32_t r) { /* 90-150 KiB per rank in float32: single copy / slots */
    return 8000 + 1700 * r;
}

static int64_t rows_before(rows_fn rows, int32_t r) {
    int64_t sum = 0;
    for (int32_t q = 0; q < r; ++q)
        sum += rows(q);
    return sum;
}

/* One gather: its output buffer, and where this rank's input lies. */
typedef struct {
    int32_t dtype;
    int in_place;
    int64_t total;
    int64_t shape_in[2], shape_out[2];
    unsigned char *out, *in_own; /* in_own: a separate input (out of place), else NULL */
    hvd_request_h req;
} gather_t;

static void gather_start(gather_t *g, const char *name, int32_t dtype, rows_fn rows, int in_place,
                         int salt) {
    size_t esz = mp_dtype_size(dtype);
    memset(g, 0, sizeof *g);
    g->dtype = dtype;
    g->in_place = in_place;
    g->total = rows_before(rows, mp_size);
    int64_t mine = rows(mp_rank), first = rows_before(rows, mp_rank);
    g->out = malloc((size_t)g->total * kCols * esz + 1);
    memset(g->out, 0xA5, (size_t)g->total * kCols * esz); /* sentinel */
    unsigned char *in = g->out + (size_t)first * kCols * esz;
    if (!in_place) in = g->in_own = malloc((size_t)mine * kCols * esz + 1);
    for (size_t k = 0; k < (size_t)(mine * kCols); ++k)
        mp_set(dtype, in, k, value(dtype, mp_rank, k, salt));
    g->shape_in[0] = mine;
    g->shape_in[1] = kCols;
    g->shape_out[0] = g->total;
    g->shape_out[1] = kCols;
    hvd_tensor_t ti = mp_tensor(in, dtype, 2, g->shape_in);
    hvd_tensor_t to = mp_tensor(g->out, dtype, 2, g->shape_out);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = name;
    hvd_status_t s = hvd_allgather_into_enqueue(mp_ctx, &ti, &to, &p, &g->req);
    if (s != HVD_OK) mp_die("allgather into '%s': enqueue returned %s", name, hvd_status_name(s));
}

static void gather_finish(gather_t *g, const char *name, rows_fn rows, int salt) {
    hvd_status_t s = mp_wait(g->req);
    if (s != HVD_OK) mp_die("allgather into '%s': %s", name, hvd_status_name(s));
    hvd_tensor_t got;
    assert_int_equal(hvd_request_output(g->req, 0, &got), HVD_OK);
    assert_ptr_equal(got.data, g->out); /* the caller's own buffer */
    assert_int_equal(got.ndim, 2);
    assert_int_equal(got.shape[0], g->total);
    assert_int_equal(got.shape[1], kCols);
    assert_int_equal(got.dtype, g->dtype);
    size_t pos = 0;
    for (int32_t r = 0; r < mp_size; ++r)
        for (size_t k = 0; k < (size_t)(rows(r) * kCols); ++k, ++pos) {
            double want = value(g->dtype, r, k, salt), have = mp_get(g->dtype, g->out, pos);
            if (have != want)
                mp_die("allgather into '%s' %s %s: element %zu (rank %d's %zu) is %g, expected %g",
                       name, mp_dtype_name(g->dtype), g->in_place ? "in place" : "out of place",
                       pos, r, k, have, want);
        }
    hvd_request_release(g->req);
    free(g->out);
    free(g->in_own);
}

static void test_every_dtype_and_layout(void **state) {
    (void)state;
    static const rows_fn layouts[] = {ragged_rows, none_on_rank0, large_rows};
    for (int l = 0; l < 3; ++l)
        for (int d = 0; d < kNumDtypes; ++d)
            for (int in_place = 0; in_place < 2; ++in_place) {
                char name[64];
                snprintf(name, sizeof name, "into.%d.%d.%d", l, d, in_place);
                gather_t g;
                gather_start(&g, name, kAllDtypes[d], layouts[l], in_place, l + d);
                gather_finish(&g, name, layouts[l], l + d);
            }
}

/* Several small gathers enqueued together run fused; mixed with a library-owned one. */
static void test_fused_run(void **state) {
    (void)state;
    enum { kOps = 8 };
    gather_t g[kOps];
    char names[kOps][32];
    for (int i = 0; i < kOps; ++i) {
        snprintf(names[i], sizeof names[i], "fused.%d", i);
        gather_start(&g[i], names[i], kAllDtypes[i % kNumDtypes], ragged_rows, i % 2, i);
    }
    int32_t v = mp_rank + 5;
    int64_t one = 1;
    hvd_tensor_t t = mp_tensor(&v, HVD_DTYPE_INT32, 1, &one);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = "fused.owned";
    hvd_request_h owned;
    assert_int_equal(hvd_allgather_enqueue(mp_ctx, &t, &p, &owned), HVD_OK);
    for (int i = 0; i < kOps; ++i)
        gather_finish(&g[i], names[i], ragged_rows, i);
    assert_int_equal(mp_wait(owned), HVD_OK);
    hvd_tensor_t out;
    assert_int_equal(hvd_request_output(owned, 0, &out), HVD_OK);
    assert_int_equal(out.shape[0], mp_size);
    for (int32_t r = 0; r < mp_size; ++r)
        assert_int_equal(((const int32_t *)out.data)[r], r + 5);
    hvd_request_release(owned);
}

/* large_rows, but the last rank has 5 more. */
static int64_t last_grows(int32_t r) {
    return large_rows(r) + (r == mp_size - 1 ? 5 : 0);
}

/* The same name again and again (response cache hits) with new data each time; then only
 * the last rank's rows change (its own description misses the cache, the others' hit). */
static void test_repeats(void **state) {
    (void)state;
    for (int salt = 0; salt < 4; ++salt) {
        gather_t g;
        gather_start(&g, "repeat", HVD_DTYPE_FLOAT32, large_rows, 1, salt);
        gather_finish(&g, "repeat", large_rows, salt);
    }
    for (int salt = 4; salt < 6; ++salt) {
        gather_t g;
        gather_start(&g, "repeat", HVD_DTYPE_FLOAT32, last_grows, salt % 2, salt);
        gather_finish(&g, "repeat", last_grows, salt);
    }
}

static void expect_invalid(const hvd_tensor_t *in, const hvd_tensor_t *out, const char *needle) {
    hvd_request_h req = NULL;
    assert_int_equal(hvd_allgather_into_enqueue(mp_ctx, in, out, NULL, &req), HVD_ERR_INVALID_ARG);
    assert_null(req);
    char detail[512];
    hvd_last_error(detail, sizeof detail);
    if (strstr(detail, needle) == NULL) mp_die("expected \"%s\" in \"%s\"", needle, detail);
}

static void test_enqueue_errors(void **state) {
    (void)state;
    float buf[64] = {0};
    int64_t in_shape[2] = {2, 4}, out_shape[2] = {2 * (int64_t)mp_size, 4};
    hvd_tensor_t in = mp_tensor(buf + 40, HVD_DTYPE_FLOAT32, 2, in_shape);
    hvd_tensor_t out = mp_tensor(buf, HVD_DTYPE_FLOAT32, 2, out_shape);
    if (mp_size > 4) return; /* the buffers above hold up to 4 ranks' rows */
    hvd_tensor_t bad = out;
    bad.dtype = HVD_DTYPE_INT32;
    expect_invalid(&in, &bad, "dtype");
    int64_t wide[2] = {2 * (int64_t)mp_size, 5};
    bad = out;
    bad.shape = wide;
    expect_invalid(&in, &bad, "beyond the first dimension");
    int64_t flat[1] = {8 * (int64_t)mp_size};
    bad = out;
    bad.ndim = 1;
    bad.shape = flat;
    expect_invalid(&in, &bad, "beyond the first dimension");
    int64_t few[2] = {1, 4};
    bad = out;
    bad.shape = few;
    expect_invalid(&in, &bad, "fewer than the input's");
    hvd_tensor_t half_row = in;
    half_row.data = buf + 2; /* overlaps the output but not on a row boundary */
    expect_invalid(&half_row, &out, "whole rows");
    hvd_tensor_t scalar = mp_tensor(buf, HVD_DTYPE_FLOAT32, 0, NULL);
    expect_invalid(&scalar, &out, "rank >= 1");
    hvd_request_h req = NULL;
    assert_int_equal(hvd_allgather_into_enqueue(mp_ctx, &in, NULL, NULL, &req),
                     HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_allgather_into_enqueue(mp_ctx, &in, &out, NULL, NULL),
                     HVD_ERR_INVALID_ARG);
}

/* One rank's mistake fails the op on every rank, with a message naming that rank, even for
 * a name the response cache already holds; the next op runs normally. */
static void expect_failure_everywhere(const char *name, int wrong_rows, int misplaced,
                                      const char *needle) {
    int32_t culprit = mp_size - 1;
    int64_t rows = 2, total = 2 * (int64_t)mp_size;
    int64_t in_shape[2] = {rows, kCols}, out_shape[2] = {total, kCols};
    if (mp_rank == culprit && wrong_rows) out_shape[0] = total + 1;
    double *out = calloc((size_t)(total + 1) * kCols, sizeof(double));
    double *in = out + (size_t)mp_rank * rows * kCols; /* in place */
    if (mp_rank == culprit && misplaced) in = out;     /* row 0 is rank 0's */
    hvd_tensor_t ti = mp_tensor(in, HVD_DTYPE_FLOAT64, 2, in_shape);
    hvd_tensor_t to = mp_tensor(out, HVD_DTYPE_FLOAT64, 2, out_shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = name;
    hvd_request_h req;
    assert_int_equal(hvd_allgather_into_enqueue(mp_ctx, &ti, &to, &p, &req), HVD_OK);
    hvd_status_t s = mp_wait(req);
    char msg[512] = "";
    hvd_request_message(req, msg, sizeof msg);
    hvd_request_release(req);
    free(out);
    if (!wrong_rows && !misplaced) {
        assert_int_equal(s, HVD_OK);
        return;
    }
    if (s != HVD_ERR_INVALID_ARG)
        mp_die("'%s': %s, expected INVALID_ARG", name, hvd_status_name(s));
    char who[32];
    snprintf(who, sizeof who, "rank %d's", culprit);
    if (strstr(msg, who) == NULL || strstr(msg, needle) == NULL)
        mp_die("'%s': message \"%s\" lacks \"%s\" or \"%s\"", name, msg, who, needle);
}

static void test_completion_errors(void **state) {
    (void)state;
    expect_failure_everywhere("checked", 0, 0, ""); /* cached by now */
    expect_failure_everywhere("checked", 0, 0, "");
    expect_failure_everywhere("checked", 1, 0, "output has");
    if (mp_size > 1) expect_failure_everywhere("checked", 0, 1, "from row 0");
    expect_failure_everywhere("checked", 0, 0, "");
    gather_t g;
    gather_start(&g, "after.errors", HVD_DTYPE_INT16, ragged_rows, 1, 3);
    gather_finish(&g, "after.errors", ragged_rows, 3);
}

/* Evens and odds gather in their own process sets at once, in place, under one name: each
 * output holds its set's members' rows (member i = global rank 2i or 2i+1) in set order. */
static void test_process_sets(void **state) {
    (void)state;
    int32_t members[2][8], count[2] = {0, 0};
    for (int32_t r = 0; r < mp_size && r < 16; ++r)
        members[r % 2][count[r % 2]++] = r;
    hvd_process_set_h sets[2] = {NULL, NULL};
    for (int k = 0; k < 2; ++k)
        if (count[k] > 0)
            assert_int_equal(hvd_process_set_create(mp_ctx, members[k], count[k], &sets[k]),
                             HVD_OK);
    const int mine = mp_rank % 2;
    int64_t total = 0, first = 0;
    for (int32_t i = 0; i < count[mine]; ++i) {
        if (members[mine][i] == mp_rank) first = total;
        total += members[mine][i] + 1;
    }
    int64_t rows = mp_rank + 1;
    int32_t *out = calloc((size_t)total * kCols, sizeof(int32_t));
    for (int64_t k = 0; k < rows * kCols; ++k)
        out[first * kCols + k] = mp_rank * 1000 + (int32_t)k;
    int64_t in_shape[2] = {rows, kCols}, out_shape[2] = {total, kCols};
    hvd_tensor_t ti = mp_tensor(out + first * kCols, HVD_DTYPE_INT32, 2, in_shape);
    hvd_tensor_t to = mp_tensor(out, HVD_DTYPE_INT32, 2, out_shape);
    hvd_op_params_t p = mp_params(sets[mine]);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = "in.set";
    hvd_request_h req;
    assert_int_equal(hvd_allgather_into_enqueue(mp_ctx, &ti, &to, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    size_t pos = 0;
    for (int32_t i = 0; i < count[mine]; ++i) {
        int32_t r = members[mine][i];
        for (int64_t k = 0; k < (r + 1) * kCols; ++k, ++pos)
            if (out[pos] != r * 1000 + (int32_t)k)
                mp_die("set gather: element %zu is %d, expected %d", pos, out[pos],
                       r * 1000 + (int32_t)k);
    }
    free(out);
    for (int k = 1; k >= 0; --k)
        if (sets[k]) assert_int_equal(hvd_process_set_destroy(mp_ctx, sets[k]), HVD_OK);
}

int main(void) {
    mp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_dtype_and_layout),
        cmocka_unit_test(test_fused_run),
        cmocka_unit_test(test_repeats),
        cmocka_unit_test(test_enqueue_errors),
        cmocka_unit_test(test_completion_errors),
        cmocka_unit_test(test_process_sets),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed) return 1;
    mp_finalize();
    return 0;
}
