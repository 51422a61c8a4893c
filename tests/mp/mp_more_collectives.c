/* SPDX-License-Identifier: Apache-2.0 */
/* Alltoall, reducescatter, barrier, handles across threads and process sets on the ranks
 * hvdrun started, against references computed here from the formula every rank used to fill
 * its input. Join, Adasum, grouped ops and fused layouts: mp_join_and_fusion.c. */
#include <math.h>
#include <pthread.h>
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
enum { kNumDtypes = sizeof kAllDtypes / sizeof kAllDtypes[0] };

/* Rows rank `from` sends to rank `to` (index within the set): uneven, sometimes zero. */
static int32_t rows_between(int32_t from, int32_t to) {
    return (from + 2 * to) % 3;
}

/* Value of element k of row i that `from` sends to `to`. */
static double alltoall_value(int32_t dtype, int32_t from, int32_t to, int64_t i, int64_t k) {
    if (dtype == HVD_DTYPE_BOOL) return (double)((from + to + i + k) % 2);
    return (double)((from * 7 + to * 3 + i * 2 + k) % 50);
}

static void check_alltoall(int32_t dtype, hvd_process_set_h ps, int32_t me, int32_t n) {
    const int64_t cols = 3;
    int32_t splits[8];
    int64_t rows = 0;
    for (int32_t j = 0; j < n; ++j)
        rows += splits[j] = rows_between(me, j);
    size_t esz = mp_dtype_size(dtype);
    unsigned char *in = malloc((size_t)(rows * cols) * esz + 1);
    int64_t pos = 0;
    for (int32_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < splits[j]; ++i)
            for (int64_t k = 0; k < cols; ++k)
                mp_set(dtype, in, (size_t)pos++, alltoall_value(dtype, me, j, i, k));
    int64_t shape[2] = {rows, cols};
    hvd_tensor_t t = mp_tensor(in, dtype, 2, shape);
    hvd_op_params_t p = mp_params(ps);
    p.field_mask |= HVD_OP_FIELD_SPLITS;
    p.splits = splits;
    p.num_splits = n;
    hvd_request_h req;
    assert_int_equal(hvd_alltoall_enqueue(mp_ctx, &t, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    int32_t got_splits[8];
    assert_int_equal(hvd_request_received_splits(req, got_splits, n), HVD_OK);
    hvd_tensor_t out;
    assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
    int64_t total = 0;
    for (int32_t j = 0; j < n; ++j) {
        assert_int_equal(got_splits[j], rows_between(j, me));
        total += got_splits[j];
    }
    assert_int_equal(out.shape[0], total);
    assert_int_equal(out.shape[1], cols);
    pos = 0;
    for (int32_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < rows_between(j, me); ++i)
            for (int64_t k = 0; k < cols; ++k, ++pos) {
                double want = alltoall_value(dtype, j, me, i, k);
                double got = mp_get(dtype, out.data, (size_t)pos);
                if (got != want)
                    mp_die("alltoall %s: element %lld from %d is %g, expected %g",
                           mp_dtype_name(dtype), (long long)pos, j, got, want);
            }
    hvd_request_release(req);
    free(in);
}

static void test_alltoall_every_dtype(void **state) {
    (void)state;
    for (int d = 0; d < kNumDtypes; ++d)
        check_alltoall(kAllDtypes[d], NULL, mp_rank, mp_size);
}

static void test_alltoall_even_split_default(void **state) {
    (void)state;
    int64_t rows = 2 * mp_size;
    int32_t *in = malloc(sizeof(int32_t) * (size_t)rows);
    for (int64_t i = 0; i < rows; ++i)
        in[i] = mp_rank * 1000 + (int32_t)i;
    int64_t shape[1] = {rows};
    hvd_tensor_t t = mp_tensor(in, HVD_DTYPE_INT32, 1, shape);
    hvd_request_h req;
    assert_int_equal(hvd_alltoall_enqueue(mp_ctx, &t, NULL, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_tensor_t out;
    assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
    const int32_t *v = out.data;
    for (int32_t j = 0; j < mp_size; ++j)
        for (int i = 0; i < 2; ++i)
            assert_int_equal(v[2 * j + i], j * 1000 + 2 * mp_rank + i);
    hvd_request_release(req);
    free(in);
}

/* Sum/Average reduce-scatter: rows split with the first d0 % n ranks getting one more. */
static void check_reducescatter(int32_t dtype, int32_t op, int64_t d0, hvd_process_set_h ps,
                                int32_t me, int32_t n) {
    const int64_t cols = 2;
    size_t count = (size_t)(d0 * cols);
    unsigned char *in = malloc(count * mp_dtype_size(dtype) + 1);
    for (size_t i = 0; i < count; ++i)
        mp_set(dtype, in, i, mp_value(dtype, me, i));
    int64_t shape[2] = {d0, cols};
    hvd_tensor_t t = mp_tensor(in, dtype, 2, shape);
    hvd_op_params_t p = mp_params(ps);
    p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
    p.reduce_op = op;
    hvd_request_h req;
    assert_int_equal(hvd_reducescatter_enqueue(mp_ctx, &t, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_tensor_t out;
    assert_int_equal(hvd_request_output(req, 0, &out), HVD_OK);
    int64_t my_rows = d0 / n + (me < d0 % n ? 1 : 0);
    int64_t first_row = me * (d0 / n) + (me < d0 % n ? me : d0 % n);
    assert_int_equal(out.shape[0], my_rows);
    int is_float = dtype == HVD_DTYPE_FLOAT16 || dtype == HVD_DTYPE_FLOAT32 ||
                   dtype == HVD_DTYPE_FLOAT64 || dtype == HVD_DTYPE_BFLOAT16;
    for (int64_t i = 0; i < my_rows * cols; ++i) {
        size_t g = (size_t)(first_row * cols + i);
        double acc = 0;
        for (int32_t r = 0; r < n; ++r)
            acc += mp_value(dtype, r, g);
        if (dtype == HVD_DTYPE_BOOL) acc = acc != 0;
        if (op == HVD_OP_AVERAGE) {
            acc = acc * (1.0 / n);
            if (!is_float) acc = trunc(acc);
        }
        double got = mp_get(dtype, out.data, (size_t)i);
        if (fabs(got - acc) > mp_tolerance(dtype, acc))
            mp_die("reducescatter %s op %d d0 %lld: element %lld is %g, expected %g",
                   mp_dtype_name(dtype), op, (long long)d0, (long long)i, got, acc);
    }
    hvd_request_release(req);
    free(in);
}

static void test_reducescatter_every_dtype(void **state) {
    (void)state;
    const int64_t rows[] = {1, 7, 2 * mp_size + 1, 5000};
    for (int d = 0; d < kNumDtypes; ++d)
        for (int r = 0; r < 4; ++r) {
            check_reducescatter(kAllDtypes[d], HVD_OP_SUM, rows[r], NULL, mp_rank, mp_size);
            if (kAllDtypes[d] != HVD_DTYPE_BOOL)
                check_reducescatter(kAllDtypes[d], HVD_OP_AVERAGE, rows[r], NULL, mp_rank, mp_size);
        }
}

static void test_reducescatter_errors(void **state) {
    (void)state;
    float x = 1;
    hvd_tensor_t scalar = mp_tensor(&x, HVD_DTYPE_FLOAT32, 0, NULL);
    hvd_request_h req;
    assert_int_equal(hvd_reducescatter_enqueue(mp_ctx, &scalar, NULL, &req), HVD_ERR_INVALID_ARG);
    int64_t shape[1] = {1};
    hvd_tensor_t t = mp_tensor(&x, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_REDUCE_OP;
    p.reduce_op = HVD_OP_MAX;
    assert_int_equal(hvd_reducescatter_enqueue(mp_ctx, &t, &p, &req), HVD_ERR_UNSUPPORTED);
}

static void test_alltoall_errors(void **state) {
    (void)state;
    int32_t data[4] = {0};
    int64_t shape[1] = {4};
    hvd_tensor_t t = mp_tensor(data, HVD_DTYPE_INT32, 1, shape);
    int32_t splits[8] = {0};
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_SPLITS;
    p.splits = splits;
    p.num_splits = mp_size + 1; /* wrong length */
    hvd_request_h req;
    assert_int_equal(hvd_alltoall_enqueue(mp_ctx, &t, &p, &req), HVD_ERR_INVALID_ARG);
    p.num_splits = mp_size;
    splits[0] = 5; /* more rows than the tensor has */
    assert_int_equal(hvd_alltoall_enqueue(mp_ctx, &t, &p, &req), HVD_ERR_INVALID_ARG);
    splits[0] = -1;
    assert_int_equal(hvd_alltoall_enqueue(mp_ctx, &t, &p, &req), HVD_ERR_INVALID_ARG);
    if (mp_size < 2) return;
    /* trailing dimensions that differ across ranks: every rank hears of it */
    int64_t shape2[2] = {mp_size, mp_rank == 1 ? 3 : 2};
    int32_t big[64] = {0};
    hvd_tensor_t t2 = mp_tensor(big, HVD_DTYPE_INT32, 2, shape2);
    assert_int_equal(hvd_alltoall_enqueue(mp_ctx, &t2, NULL, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_ERR_MISMATCH);
    char msg[512];
    hvd_request_message(req, msg, sizeof msg);
    assert_non_null(strstr(msg, "rank 1 has trailing dimensions [3]"));
    hvd_request_release(req);
}

/* A barrier completes while another named op stays pending on some ranks. */
static void test_barrier_with_pending_ops(void **state) {
    (void)state;
    float x[2] = {1, 2};
    int64_t shape[1] = {2};
    hvd_tensor_t t = mp_tensor(x, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t named = mp_params(NULL);
    named.field_mask = HVD_OP_FIELD_NAME;
    named.name = "after.barrier";
    hvd_request_h pending = NULL, barrier;
    if (mp_rank == 0)
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &named, &pending), HVD_OK);
    assert_int_equal(hvd_barrier_enqueue(mp_ctx, NULL, &barrier), HVD_OK);
    assert_int_equal(mp_wait(barrier), HVD_OK);
    hvd_request_release(barrier);
    if (mp_rank != 0)
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &named, &pending), HVD_OK);
    assert_int_equal(mp_wait(pending), HVD_OK);
    hvd_request_release(pending);
    assert_true(x[1] == 2.0f * mp_size);
}

/* Request handles made on one thread and released on another, by a thread that has ended:
 * handles are recycled per thread, and a thread's list goes when the thread does. */
enum { kThreadOps = 40 };
typedef struct {
    float values[kThreadOps][3];
    hvd_request_h reqs[kThreadOps];
} thread_ops_t;

static void *enqueue_on_a_thread(void *arg) {
    thread_ops_t *ops = arg;
    for (int k = 0; k < kThreadOps; ++k) {
        for (int i = 0; i < 3; ++i)
            ops->values[k][i] = (float)(mp_rank + k + i);
        int64_t shape[1] = {3};
        hvd_tensor_t t = mp_tensor(ops->values[k], HVD_DTYPE_FLOAT32, 1, shape);
        char name[32];
        snprintf(name, sizeof name, "threads.%d", k);
        hvd_op_params_t p = mp_reduce_params(name, HVD_OP_SUM);
        if (hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &ops->reqs[k]) != HVD_OK)
            mp_die("enqueue on a thread");
    }
    return NULL;  // the handles outlive this thread
}

static void test_handles_across_threads(void **state) {
    (void)state;
    for (int round = 0; round < 3; ++round) {
        thread_ops_t ops;
        pthread_t thread;
        assert_int_equal(pthread_create(&thread, NULL, enqueue_on_a_thread, &ops), 0);
        assert_int_equal(pthread_join(thread, NULL), 0);
        for (int k = 0; k < kThreadOps; ++k) {
            assert_int_equal(mp_wait(ops.reqs[k]), HVD_OK);
            assert_int_equal(hvd_request_release(ops.reqs[k]), HVD_OK);  // to this thread's list
            for (int i = 0; i < 3; ++i) {
                double want = 0;
                for (int32_t r = 0; r < mp_size; ++r)
                    want += r + k + i;
                assert_true(ops.values[k][i] == (float)want);
            }
        }
    }
}

/* Sum allreduce inside a set (member index me of n), in place or not, every value checked. */
static void check_subset_allreduce(int32_t dtype, hvd_process_set_h ps, int32_t me, int32_t n,
                                   int in_place) {
    enum { kCount = 19 };
    unsigned char in[kCount * 8], outb[kCount * 8];
    unsigned char *out = in_place ? in : outb;
    for (size_t i = 0; i < kCount; ++i)
        mp_set(dtype, in, i, mp_value(dtype, me, i));
    int64_t shape[1] = {kCount};
    hvd_tensor_t tin = mp_tensor(in, dtype, 1, shape);
    hvd_tensor_t tout = mp_tensor(out, dtype, 1, shape);
    hvd_op_params_t p = mp_params(ps);
    hvd_request_h req;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &tin, &tout, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    for (size_t i = 0; i < kCount; ++i) {
        double acc = 0;
        for (int32_t r = 0; r < n; ++r)
            acc += mp_value(dtype, r, i);
        if (dtype == HVD_DTYPE_BOOL) acc = acc != 0;
        double got = mp_get(dtype, out, i);
        if (fabs(got - acc) > mp_tolerance(dtype, acc))
            mp_die("set allreduce %s: element %zu is %g, expected %g", mp_dtype_name(dtype), i, got,
                   acc);
    }
}

/* Sets: the even ranks and the odd ranks, used at the same time, then the global set. */
static void test_process_sets(void **state) {
    (void)state;
    int32_t evens[8] = {0}, odds[8] = {0}, ne = 0, no = 0;
    for (int32_t r = 0; r < mp_size; ++r) {
        if (r % 2)
            odds[no++] = r;
        else
            evens[ne++] = r;
    }
    hvd_process_set_h even_set, odd_set = NULL;
    assert_int_equal(hvd_process_set_create(mp_ctx, evens, ne, &even_set), HVD_OK);
    if (no > 0) assert_int_equal(hvd_process_set_create(mp_ctx, odds, no, &odd_set), HVD_OK);
    hvd_process_set_h mine = mp_rank % 2 ? odd_set : even_set;
    hvd_process_set_h other = mp_rank % 2 ? even_set : odd_set;
    int32_t me, n, included;
    assert_int_equal(hvd_rank(mp_ctx, mine, &me), HVD_OK);
    assert_int_equal(hvd_size(mp_ctx, mine, &n), HVD_OK);
    assert_int_equal(me, mp_rank / 2);
    assert_int_equal(n, mp_rank % 2 ? no : ne);
    assert_int_equal(hvd_process_set_included(mp_ctx, mine, &included), HVD_OK);
    assert_int_equal(included, 1);
    if (other) {
        int32_t r;
        assert_int_equal(hvd_rank(mp_ctx, other, &r), HVD_OK);
        assert_int_equal(r, -1);
        /* an op on a set this rank is not in */
        float y = 1;
        int64_t s1[1] = {1};
        hvd_tensor_t ty = mp_tensor(&y, HVD_DTYPE_FLOAT32, 1, s1);
        hvd_op_params_t p = mp_params(other);
        hvd_request_h req;
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &ty, &ty, &p, &req), HVD_ERR_INVALID_ARG);
    }
    /* the same name in both sets at once: names are per set */
    int64_t v[4];
    int64_t shape[1] = {4};
    for (int i = 0; i < 4; ++i)
        v[i] = mp_rank + i;
    hvd_tensor_t t = mp_tensor(v, HVD_DTYPE_INT64, 1, shape);
    hvd_op_params_t p = mp_params(mine);
    p.field_mask |= HVD_OP_FIELD_NAME;
    p.name = "in.my.set";
    hvd_request_h req;
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    int64_t sum_ranks = 0;
    for (int32_t r = mp_rank % 2; r < mp_size; r += 2)
        sum_ranks += r;
    for (int i = 0; i < 4; ++i)
        assert_int_equal(v[i], sum_ranks + (int64_t)n * i);
    /* broadcast from the set's last member, alltoall and reducescatter inside the set */
    double w[3] = {-1, -1, -1};
    if (me == n - 1) w[0] = 1, w[1] = 2, w[2] = 3;
    int64_t s3[1] = {3};
    hvd_tensor_t tw = mp_tensor(w, HVD_DTYPE_FLOAT64, 1, s3);
    hvd_op_params_t pb = mp_params(mine);
    pb.field_mask |= HVD_OP_FIELD_ROOT;
    pb.root_rank = n - 1;
    assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &tw, &tw, &pb, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    assert_true(w[0] == 1 && w[1] == 2 && w[2] == 3);
    for (int d = 0; d < kNumDtypes; ++d) {
        check_alltoall(kAllDtypes[d], mine, me, n);
        check_reducescatter(kAllDtypes[d], HVD_OP_SUM, 5, mine, me, n);
        check_subset_allreduce(kAllDtypes[d], mine, me, n, d % 2);
    }
    /* destroy: collective over all ranks */
    if (odd_set) assert_int_equal(hvd_process_set_destroy(mp_ctx, odd_set), HVD_OK);
    assert_int_equal(hvd_process_set_destroy(mp_ctx, even_set), HVD_OK);
    assert_int_equal(hvd_process_set_included(mp_ctx, even_set, &included), HVD_ERR_INVALID_ARG);
    assert_int_equal(hvd_process_set_destroy(mp_ctx, NULL), HVD_ERR_INVALID_ARG);
}

static void test_process_set_mismatch(void **state) {
    (void)state;
    if (mp_size < 3) skip();
    /* rank 2 proposes a different set: everyone hears of it */
    int32_t ranks[2] = {0, mp_rank == 2 ? 2 : 1};
    hvd_process_set_h ps;
    assert_int_equal(hvd_process_set_create(mp_ctx, ranks, 2, &ps), HVD_ERR_MISMATCH);
    char detail[512];
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "rank 2 has ranks [0,2]"));
    int32_t bad[2] = {0, 0};
    assert_int_equal(hvd_process_set_create(mp_ctx, bad, 2, &ps), HVD_ERR_INVALID_ARG);
}

int main(void) {
    mp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alltoall_every_dtype),
        cmocka_unit_test(test_alltoall_even_split_default),
        cmocka_unit_test(test_alltoall_errors),
        cmocka_unit_test(test_reducescatter_every_dtype),
        cmocka_unit_test(test_reducescatter_errors),
        cmocka_unit_test(test_barrier_with_pending_ops),
        cmocka_unit_test(test_handles_across_threads),
        cmocka_unit_test(test_process_sets),
        cmocka_unit_test(test_process_set_mismatch),
    };
    if (cmocka_run_group_tests(tests, NULL, NULL) != 0) return 1;
    mp_finalize();
    return 0;
}
