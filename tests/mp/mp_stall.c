/* SPDX-License-Identifier: Apache-2.0 */
/* The stall inspector. Run with HVD_STALL_CHECK_TIME_SECONDS=1 and
 * HVD_STALL_SHUTDOWN_TIME_SECONDS=3: the last rank never enqueues 'lonely'; the coordinator
 * names it in the log, then fails the op on the ranks that enqueued it (rank 0: with
 * HVD_ERR_TIMED_OUT and a message naming the missing rank) and the job aborts. Every rank
 * prints "stall ok" once it saw what it should. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mp_check.h"

static void test_stalled_op_fails_with_a_clear_error(void **state) {
    (void)state;
    int32_t lonely = mp_size - 1;
    float x[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    hvd_tensor_t t = mp_tensor(x, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = "lonely";
    hvd_request_h req;
    if (mp_rank == lonely) {
        /* never enqueues 'lonely': sees the job abort instead */
        hvd_request_h other;
        p.name = "only.on.the.last.rank";
        assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &other), HVD_OK);
        hvd_status_t s = hvd_request_wait(other, 20000);
        assert_true(s == HVD_ERR_PEER_FAILED || s == HVD_ERR_TIMED_OUT);
        hvd_request_release(other);
        return;
    }
    assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
    hvd_status_t s = hvd_request_wait(req, 20000);
    char msg[512];
    hvd_request_message(req, msg, sizeof msg);
    hvd_request_release(req);
    if (mp_rank == 0) {
        assert_int_equal(s, HVD_ERR_TIMED_OUT);
        char want[64];
        snprintf(want, sizeof want, "not yet enqueued on rank(s) %d", lonely);
        if (!strstr(msg, want)) mp_die("message '%s' does not name rank %d", msg, lonely);
    } else {
        assert_true(s == HVD_ERR_TIMED_OUT || s == HVD_ERR_PEER_FAILED);
    }
}

int main(void) {
    mp_init();
    if (mp_size < 2) return 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stalled_op_fails_with_a_clear_error),
    };
    if (cmocka_run_group_tests(tests, NULL, NULL) != 0) return 1;
    mp_finalize();
    printf("rank %d: stall ok\n", mp_rank);
    return 0;
}
