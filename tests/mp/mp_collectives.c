/* SPDX-License-Identifier: Apache-2.0 */
/* Every collective x dtype x op on the ranks hvdrun started, against references computed here
 * from the formula each rank used to fill its input. Also: ragged allgather, broadcast from
 * every root, different enqueue orders per rank, mismatches reported on every rank. */
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

static const int32_t kAllDtypes[] = {HVD_DTYPE_UINT8,   HVD_DTYPE_INT8,    HVD_DTYPE_UINT16,
                                     HVD_DTYPE_INT16,   HVD_DTYPE_INT32,   HVD_DTYPE_INT64,
                                     HVD_DTYPE_FLOAT16, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64,
                                     HVD_DTYPE_BOOL,    HVD_DTYPE_BFLOAT16};
static const int kNumDtypes = sizeof kAllDtypes / sizeof kAllDtypes[0];

static void check_allreduce(int32_t dtype, int32_t op, size_t count, int in_place) {
    size_t esz = mp_dtype_size(dtype);
    unsigned char *in = malloc(count * esz + 1);
    unsigned char *out = in_place ? in : malloc(count * esz + 1);
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < count; ++i)
        mp_set(dtype, in, i, mp_value(dtype, mp_rank, i));
    int64_t shape[1] = {(int64_t)count};
    hvd_tensor_t tin = mp_tensor(in, dtype, 1, shape);
    hvd_tensor_t tout = mp_tensor(out, dtype, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_REDUCE_OP;
    p.reduce_op = op;
    hvd_request_h req;
    hvd_status_t s = hvd_allreduce_enqueue(mp_ctx, &tin, &tout, &p, &req);
    if (s != HVD_OK)
        mp_die("allreduce enqueue %s op %d: %s", mp_dtype_name(dtype), op, hvd_status_name(s));
    s = mp_wait(req);
    if (s != HVD_OK) mp_die("allreduce %s op %d: %s", mp_dtype_name(dtype), op, hvd_status_name(s));
    hvd_request_release(req);
    for (size_t i = 0; i < count; ++i) {
        double ref = mp_reference(dtype, op, i);
        double got = mp_get(dtype, out, i);
        if (fabs(got - ref) > mp_tolerance(dtype, ref))
            mp_die("allreduce %s op %d count %zu %s: element %zu is %g, expected %g",
                   mp_dtype_name(dtype), op, count, in_place ? "in place" : "out of place", i, got,
                   ref);
    }
    if (!in_place) /* the input must be untouched */
        for (size_t i = 0; i < count; ++i)
            assert_true(mp_get(dtype, in, i) == mp_value(dtype, mp_rank, i) ||
                        dtype == HVD_DTYPE_BOOL);
    if (out != in) free(out);
    free(in);
}

static void test_allreduce_every_dtype_and_op(void **state) {
    (void)state;
    static const int32_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX,
                                  HVD_OP_PRODUCT};
    static const size_t counts[] = {1, 37, 70001};
    for (int d = 0; d < kNumDtypes; ++d)
        for (int o = 0; o < 5; ++o)
            for (int c = 0; c < 3; ++c)
                for (int in_place = 0; in_place < 2; ++in_place) {
                    if (kAllDtypes[d] == HVD_DTYPE_BOOL && ops[o] == HVD_OP_AVERAGE) continue;
                    check_allreduce(kAllDtypes[d], ops[o], counts[c], in_place);
                }
}

static void test_allreduce_scaling(void **state) {
    (void)state;
    static const int32_t dtypes[] = {HVD_DTYPE_INT32, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64,
                                     HVD_DTYPE_FLOAT16, HVD_DTYPE_INT64};
    const size_t count = 101;
    for (int d = 0; d < 5; ++d) {
        int32_t dtype = dtypes[d];
        double *buf = malloc(count * 8);
        for (size_t i = 0; i < count; ++i)
            mp_set(dtype, buf, i, mp_value(dtype, mp_rank, i));
        int64_t shape[1] = {(int64_t)count};
        hvd_tensor_t t = mp_tensor(buf, dtype, 1, shape);
        hvd_op_params_t p = mp_params(NULL);
        p.field_mask = HVD_OP_FIELD_SCALE | HVD_OP_FIELD_NAME;
        p.name = "scaled";
        p.prescale = 1.5;
        p.postscale = 0.25;
        hvd_request_h req;
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
        assert_int_equal(mp_wait(req), HVD_OK);
        hvd_request_release(req);
        for (size_t i = 0; i < count; ++i) {
            double acc = 0;
            for (int32_t r = 0; r < mp_size; ++r) {
                double v = mp_value(dtype, r, i) * 1.5;
                acc += mp_is_float(dtype) ? v : trunc(v);
            }
            double ref = acc * 0.25;
            if (!mp_is_float(dtype)) ref = trunc(ref);
            double got = mp_get(dtype, buf, i);
            if (fabs(got - ref) > mp_tolerance(dtype, ref))
                mp_die("scaled allreduce %s element %zu: %g, expected %g", mp_dtype_name(dtype), i,
                       got, ref);
        }
        free(buf);
    }
}

static void test_allgather_ragged(void **state) {
    (void)state;
    static const int32_t dtypes[] = {HVD_DTYPE_INT32, HVD_DTYPE_FLOAT64, HVD_DTYPE_INT8,
                                     HVD_DTYPE_BFLOAT16};
    for (int d = 0; d < 4; ++d) {
        int32_t dtype = dtypes[d];
        int64_t rows = mp_rank % 3; /* rank 0 contributes nothing */
        int64_t shape[2] = {rows, 3};
        unsigned char buf[64];
        for (int64_t i = 0; i < rows * 3; ++i)
            mp_set(dtype, buf, (size_t)i, mp_rank * 10 + i);
        hvd_tensor_t t = mp_tensor(buf, dtype, 2, shape);
        hvd_request_h req;
        assert_int_equal(hvd_allgather_enqueue(mp_ctx, &t, NULL, &req), HVD_OK);
        assert_int_equal(mp_wait(req), HVD_OK);
        hvd_tensor_t out;
        assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
        int64_t total = 0;
        for (int32_t r = 0; r < mp_size; ++r)
            total += r % 3;
        assert_int_equal(out.ndim, 2);
        assert_int_equal(out.shape[0], total);
        assert_int_equal(out.shape[1], 3);
        assert_int_equal(out.dtype, dtype);
        size_t pos = 0;
        for (int32_t r = 0; r < mp_size; ++r)
            for (int64_t i = 0; i < (r % 3) * 3; ++i, ++pos)
                if (mp_get(dtype, out.data, pos) != (double)(r * 10 + i))
                    mp_die("allgather %s: element %zu is %g, expected %g", mp_dtype_name(dtype),
                           pos, mp_get(dtype, out.data, pos), (double)(r * 10 + i));
        hvd_request_release(req);
    }
}

static void test_broadcast_every_root(void **state) {
    (void)state;
    static const int32_t dtypes[] = {HVD_DTYPE_FLOAT32, HVD_DTYPE_INT64, HVD_DTYPE_FLOAT16};
    static const size_t counts[] = {5, 300000};
    for (int32_t root = 0; root < mp_size; ++root)
        for (int d = 0; d < 3; ++d)
            for (int c = 0; c < 2; ++c)
                for (int in_place = 0; in_place < 2; ++in_place) {
                    int32_t dtype = dtypes[d];
                    size_t count = counts[c];
                    size_t esz = mp_dtype_size(dtype);
                    unsigned char *in = malloc(count * esz);
                    unsigned char *out = in_place ? in : malloc(count * esz);
                    for (size_t i = 0; i < count; ++i) {
                        mp_set(dtype, in, i, mp_rank == root ? (double)(root + i % 1000) : -1);
                        if (!in_place) mp_set(dtype, out, i, -2);
                    }
                    int64_t shape[1] = {(int64_t)count};
                    hvd_tensor_t tin = mp_tensor(in, dtype, 1, shape);
                    hvd_tensor_t tout = mp_tensor(out, dtype, 1, shape);
                    hvd_op_params_t p = mp_params(NULL);
                    p.field_mask = HVD_OP_FIELD_ROOT;
                    p.root_rank = root;
                    hvd_request_h req;
                    assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &tin, &tout, &p, &req), HVD_OK);
                    assert_int_equal(mp_wait(req), HVD_OK);
                    hvd_request_release(req);
                    for (size_t i = 0; i < count; ++i)
                        if (mp_get(dtype, out, i) != (double)(root + i % 1000))
                            mp_die("broadcast root %d %s count %zu: element %zu is %g", root,
                                   mp_dtype_name(dtype), count, i, mp_get(dtype, out, i));
                    if (out != in) free(out);
                    free(in);
                }
}

/* Odd ranks enqueue in reverse order: names, not call order, match ops across ranks. */
static void test_different_enqueue_orders(void **state) {
    (void)state;
    enum { kOps = 10, kCount = 100 };
    static int32_t bufs[kOps][kCount];
    hvd_request_h reqs[kOps];
    int64_t shape[1] = {kCount};
    for (int j = 0; j < kOps; ++j) {
        int k = (mp_rank % 2) ? kOps - 1 - j : j;
        for (int i = 0; i < kCount; ++i)
            bufs[k][i] = k * (mp_rank + 1) + i;
        hvd_tensor_t t = mp_tensor(bufs[k], HVD_DTYPE_INT32, 1, shape);
        char name[32];
        snprintf(name, sizeof name, "order.%d", k);
        hvd_op_params_t p = mp_params(NULL);
        p.field_mask = HVD_OP_FIELD_NAME;
        p.name = name;
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &reqs[k]), HVD_OK);
    }
    for (int k = 0; k < kOps; ++k) {
        assert_int_equal(mp_wait(reqs[k]), HVD_OK);
        hvd_request_release(reqs[k]);
        for (int i = 0; i < kCount; ++i)
            assert_int_equal(bufs[k][i], k * mp_size * (mp_size + 1) / 2 + i * mp_size);
    }
}

/* Enqueue one allreduce whose shape or dtype depends on the rank; return its status. */
static hvd_status_t odd_allreduce(const char *name, int32_t dtype, int64_t len, char *msg,
                                  size_t msg_len) {
    float buf[8] = {0};
    int64_t shape[1] = {len};
    hvd_tensor_t t = mp_tensor(buf, dtype, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = name;
    hvd_request_h req;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
    hvd_status_t s = mp_wait(req);
    hvd_request_message(req, msg, msg_len);
    hvd_request_release(req);
    return s;
}

static void test_mismatches_reported_everywhere(void **state) {
    (void)state;
    if (mp_size < 2) skip();
    char msg[1024];
    /* shape: rank 1 differs */
    hvd_status_t s =
        odd_allreduce("mm.shape", HVD_DTYPE_FLOAT32, mp_rank == 1 ? 5 : 4, msg, sizeof msg);
    assert_int_equal(s, HVD_ERR_MISMATCH);
    assert_non_null(strstr(msg, "rank 1 has shape [5]"));
    assert_non_null(strstr(msg, "mm.shape"));
    /* dtype: the last rank differs */
    s = odd_allreduce("mm.dtype", mp_rank == mp_size - 1 ? HVD_DTYPE_INT32 : HVD_DTYPE_FLOAT32, 4,
                      msg, sizeof msg);
    assert_int_equal(s, HVD_ERR_MISMATCH);
    assert_non_null(strstr(msg, "dtype int32"));
    /* broadcast root disagreement */
    float buf[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_ROOT;
    p.name = "mm.root";
    p.root_rank = mp_rank == 0 ? 0 : 1;
    hvd_request_h req;
    assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_ERR_MISMATCH);
    hvd_request_message(req, msg, sizeof msg);
    assert_non_null(strstr(msg, "root rank"));
    hvd_request_release(req);
    /* the context still works afterwards */
    check_allreduce(HVD_DTYPE_FLOAT32, HVD_OP_SUM, 16, 1);
}

static void test_duplicate_name_rejected(void **state) {
    (void)state;
    float a[2] = {1, 2}, b[2] = {3, 4};
    int64_t shape[1] = {2};
    hvd_tensor_t ta = mp_tensor(a, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_tensor_t tb = mp_tensor(b, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = "dup";
    hvd_request_h first, second;
    /* Other ranks enqueue "dup" only after rank 0's "go" broadcast, so rank 0's first "dup"
     * is certainly still in flight when it tries the second. */
    if (mp_rank == 0) {
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &ta, &ta, &p, &first), HVD_OK);
        hvd_status_t s = hvd_allreduce_enqueue(mp_ctx, &tb, &tb, &p, &second);
        if (mp_size > 1 || hvd_request_test(first) == HVD_INPROGRESS)
            assert_int_equal(s, HVD_ERR_INVALID_ARG);
        else if (s == HVD_OK) {
            assert_int_equal(mp_wait(second), HVD_OK);
            hvd_request_release(second);
        }
    }
    int32_t go = 1;
    int64_t one[1] = {1};
    hvd_tensor_t tg = mp_tensor(&go, HVD_DTYPE_INT32, 1, one);
    hvd_request_h greq;
    assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &tg, &tg, NULL, &greq), HVD_OK);
    assert_int_equal(mp_wait(greq), HVD_OK);
    hvd_request_release(greq);
    if (mp_rank != 0) assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &ta, &ta, &p, &first), HVD_OK);
    assert_int_equal(mp_wait(first), HVD_OK);
    hvd_request_release(first);
    assert_true(a[0] == 1.0f * mp_size);
}

/* Bad arguments are refused at enqueue, on this rank alone, with the right status. */
static void test_invalid_arguments(void **state) {
    (void)state;
    float a[4] = {0};
    int64_t shape[1] = {4}, negative[1] = {-1};
    hvd_tensor_t t = mp_tensor(a, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_request_h req = NULL;
    hvd_op_params_t p = mp_params(NULL);
    char detail[256];
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, NULL, &t, NULL, &req), HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, NULL, NULL), HVD_ERR_INVALID_ARG);
    p.field_mask = HVD_BIT(50);
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_UNSUPPORTED);
    hvd_tensor_t bad = t;
    bad.field_mask = HVD_BIT(9);
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &bad, &bad, NULL, &req), HVD_ERR_UNSUPPORTED);
    bad = t;
    bad.dtype = 99;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &bad, &bad, NULL, &req), HVD_ERR_INVALID_ARG);
    bad = t;
    bad.shape = negative;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &bad, &bad, NULL, &req), HVD_ERR_INVALID_ARG);
    bad = t; /* host memory said to be on a GPU: no usable device, or not that device's memory */
    bad.device_type = HVD_DEVICE_CUDA;
    hvd_status_t cuda = hvd_allreduce_enqueue(mp_ctx, &bad, &bad, NULL, &req);
    assert_true(cuda == HVD_ERR_UNSUPPORTED || cuda == HVD_ERR_INVALID_ARG);
    bad = t; /* the GPU layer's fields on a host tensor: refused, never ignored */
    bad.field_mask = HVD_TENSOR_FIELD_READY_EVENT;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &bad, &bad, NULL, &req), HVD_ERR_INVALID_ARG);
    p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_STREAM;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_INVALID_ARG);
    hvd_tensor_t other = mp_tensor(a, HVD_DTYPE_INT32, 1, shape);
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &other, NULL, &req), HVD_ERR_INVALID_ARG);
    float wide[7] = {0}; /* an output sharing some of the input's bytes */
    hvd_tensor_t low = mp_tensor(wide, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_tensor_t high = mp_tensor(wide + 3, HVD_DTYPE_FLOAT32, 1, shape);
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &low, &high, NULL, &req), HVD_ERR_INVALID_ARG);
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "overlaps the input"));
    p = mp_params(NULL);
    assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &high, &low, &p, &req), HVD_ERR_INVALID_ARG);
    p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_REDUCE_OP;
    p.reduce_op = 77;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_INVALID_ARG);
    p.reduce_op = HVD_OP_ADASUM; /* integers cannot be Adasum-combined */
    hvd_tensor_t ints = mp_tensor(a, HVD_DTYPE_INT32, 1, shape);
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &ints, &ints, &p, &req), HVD_ERR_UNSUPPORTED);
    if (mp_size == 3) /* nor can 3 ranks */
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_UNSUPPORTED);
    p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_ROOT;
    p.root_rank = mp_size;
    assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_INVALID_ARG);
    hvd_tensor_t scalar = mp_tensor(a, HVD_DTYPE_FLOAT32, 0, NULL);
    assert_int_equal(hvd_allgather_enqueue(mp_ctx, &scalar, NULL, &req), HVD_ERR_INVALID_ARG);
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "rank >= 1"));
    assert_null(req); /* never written on failure */
}

static void test_topology_queries(void **state) {
    (void)state;
    int32_t lr, ls, cr, cs;
    assert_int_equal(hvd_local_rank(mp_ctx, &lr), HVD_OK);
    assert_int_equal(hvd_local_size(mp_ctx, &ls), HVD_OK);
    assert_int_equal(hvd_cross_rank(mp_ctx, &cr), HVD_OK);
    assert_int_equal(hvd_cross_size(mp_ctx, &cs), HVD_OK);
    /* every test rank runs on this one host, unless MP_RANKS_PER_HOST=n says the ranks fill
     * hosts of n ranks each in order (the cluster tests; the last host may have fewer) */
    const char *per_host_env = getenv("MP_RANKS_PER_HOST");
    int32_t per_host = per_host_env != NULL ? (int32_t)atoi(per_host_env) : mp_size;
    assert_true(per_host >= 1);
    int32_t first = mp_rank / per_host * per_host; /* this host's first rank */
    int32_t cross_size = 0;                        /* the hosts with a rank of this local rank */
    for (int32_t host_first = 0; host_first < mp_size; host_first += per_host)
        cross_size += host_first + mp_rank % per_host < mp_size;
    assert_int_equal(lr, mp_rank % per_host);
    assert_int_equal(ls, mp_size - first < per_host ? mp_size - first : per_host);
    assert_int_equal(cr, mp_rank / per_host);
    assert_int_equal(cs, cross_size);
}

int main(void) {
    mp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topology_queries),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_allreduce_every_dtype_and_op),
        cmocka_unit_test(test_allreduce_scaling),
        cmocka_unit_test(test_allgather_ragged),
        cmocka_unit_test(test_broadcast_every_root),
        cmocka_unit_test(test_different_enqueue_orders),
        cmocka_unit_test(test_mismatches_reported_everywhere),
        cmocka_unit_test(test_duplicate_name_rejected),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed) return 1;
    mp_finalize();
    return 0;
}
