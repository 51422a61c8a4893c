/* SPDX-License-Identifier: Apache-2.0 */
/* Failure semantics. Mode "kill-midway": the last rank dies while a 32 MiB allreduce is in
 * flight; the others' request fails with HVD_ERR_PEER_FAILED within 10 s. Mode "kill": the last
 * rank dies (SIGKILL) after a first allreduce; every other rank must see its outstanding and its
 * next request fail with HVD_ERR_PEER_FAILED within 10 s, and finalize without waiting. Mode
 * "abort": the last rank calls hvd_abort with a request outstanding; its own request ends with the
 * abort status, the others' with HVD_ERR_PEER_FAILED. Every survivor prints "survivor ok". */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mp_check.h"

static const char *g_mode = "kill";

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static hvd_status_t enqueue_sum(const char *name, float *buf, int64_t n, hvd_request_h *req) {
    int64_t shape[1] = {n};
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = name;
    return hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, req);
}

static void test_failure_propagates(void **state) {
    (void)state;
    float buf[1024];
    for (int i = 0; i < 1024; ++i)
        buf[i] = 1.0f;
    hvd_request_h req;
    assert_int_equal(enqueue_sum("before", buf, 1024, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
    assert_true(buf[0] == (float)mp_size);

    int victim = mp_size - 1;
    if (strcmp(g_mode, "kill-midway") == 0) {
        /* The victim dies while a large allreduce is moving data through shared memory. */
        enum { kBig = 8 << 20 };
        float *big = calloc(kBig, sizeof(float));
        assert_non_null(big);
        /* let every survivor finish "before" first: a death noticed while an op is still
         * completing fails that op too */
        if (mp_rank == victim) usleep(300 * 1000);
        double t0 = now_ms();
        assert_int_equal(enqueue_sum("big", big, kBig, &req), HVD_OK);
        if (mp_rank == victim) {
            usleep(3000);
            raise(SIGKILL);
        }
        hvd_status_t s = hvd_request_wait(req, 15000);
        double elapsed = now_ms() - t0;
        /* A fast machine may finish before the victim dies; then the next op must fail. */
        if (s == HVD_OK) {
            hvd_request_release(req);
            assert_int_equal(enqueue_sum("big.after", big, kBig, &req), HVD_OK);
            s = hvd_request_wait(req, 15000);
            elapsed = now_ms() - t0;
        }
        if (s != HVD_ERR_PEER_FAILED)
            mp_die("expected HVD_ERR_PEER_FAILED mid-transfer, got %s", hvd_status_name(s));
        if (elapsed > 10000) mp_die("the failure took %.0f ms to be noticed", elapsed);
        hvd_request_release(req);
        free(big);
        printf("rank %d: peer death mid-transfer noticed after %.0f ms\n", mp_rank, elapsed);
        return;
    }
    if (mp_rank == victim) {
        if (strcmp(g_mode, "kill") == 0) {
            usleep(200 * 1000); /* let the others enqueue first */
            raise(SIGKILL);
        }
        /* a name only this rank uses: it can never complete */
        assert_int_equal(enqueue_sum("pending.victim", buf, 1024, &req), HVD_OK);
        usleep(200 * 1000);
        assert_int_equal(hvd_abort(mp_ctx, HVD_ERR_ABORTED), HVD_OK);
        assert_int_equal(mp_wait(req), HVD_ERR_ABORTED);
        hvd_request_release(req);
        assert_int_equal(hvd_context_error(mp_ctx), HVD_ERR_ABORTED);
        assert_int_equal(enqueue_sum("after", buf, 4, &req), HVD_ERR_ABORTED);
        printf("rank %d: aborted itself\n", mp_rank);
        return;
    }
    double t0 = now_ms();
    /* "pending" can never complete: the victim never joins it (or aborts). */
    assert_int_equal(enqueue_sum("pending", buf, 1024, &req), HVD_OK);
    hvd_status_t s = hvd_request_wait(req, 15000);
    double elapsed = now_ms() - t0;
    if (s != HVD_ERR_PEER_FAILED)
        mp_die("expected HVD_ERR_PEER_FAILED, got %s", hvd_status_name(s));
    if (elapsed > 10000) mp_die("the failure took %.0f ms to be noticed", elapsed);
    char msg[512];
    hvd_request_message(req, msg, sizeof msg);
    hvd_request_release(req);
    /* later enqueues fail at once */
    s = enqueue_sum("later", buf, 4, &req);
    assert_int_equal(s, HVD_ERR_PEER_FAILED);
    printf("rank %d: peer failure noticed after %.0f ms: %s\n", mp_rank, elapsed, msg);
}

int main(int argc, char **argv) {
    if (argc > 1) g_mode = argv[1];
    mp_init();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_failure_propagates)};
    if (cmocka_run_group_tests(tests, NULL, NULL) != 0) return 1;
    double t0 = now_ms();
    mp_finalize(); /* an aborted context finalizes without waiting for peers */
    double elapsed = now_ms() - t0;
    if (elapsed > 5000) mp_die("finalize of an aborted context took %.0f ms", elapsed);
    printf("rank %d: survivor ok\n", mp_rank);
    return 0;
}
