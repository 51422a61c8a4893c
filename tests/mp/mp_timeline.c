/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline: every rank records its own file through the C ABI while it runs a few ops,
 * then checks it with check_timeline.py (valid JSON, balanced spans, the expected rows). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mp_check.h"

static const char *g_checker;
static const char *g_dir;

static void run_named(const char *name, int kind) {
    float x[16];
    for (int i = 0; i < 16; ++i)
        x[i] = (float)(mp_rank + i);
    int64_t shape[1] = {16};
    hvd_tensor_t t = mp_tensor(x, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = name;
    hvd_request_h req;
    if (kind == 0) assert_int_equal(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
    if (kind == 1) assert_int_equal(hvd_allgather_enqueue(mp_ctx, &t, &p, &req), HVD_OK);
    if (kind == 2) assert_int_equal(hvd_broadcast_enqueue(mp_ctx, &t, &t, &p, &req), HVD_OK);
    assert_int_equal(mp_wait(req), HVD_OK);
    hvd_request_release(req);
}

static void test_timeline_records_every_op(void **state) {
    (void)state;
    char path[512];
    // The job size in the name: the 1-, 2- and 3-rank tests share the directory and may run
    // at once.
    snprintf(path, sizeof path, "%s/timeline.np%d.%d.json", g_dir, mp_size, mp_rank);
    assert_int_equal(hvd_timeline_start(mp_ctx, path, 1), HVD_OK);
    assert_int_equal(hvd_timeline_start(mp_ctx, path, 1), HVD_ERR_BUSY);
    run_named("allreduce.w \"quoted\"", 0);
    run_named("allgather.batch", 1);
    run_named("broadcast.init", 2);
    assert_int_equal(hvd_timeline_stop(mp_ctx), HVD_OK);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 '%s' '%s' 'allreduce.w \"quoted\"' allgather.batch broadcast.init", g_checker,
             path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(hvd_timeline_start(mp_ctx, "/nonexistent-dir/x.json", 0), HVD_ERR_INVALID_ARG);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: mp_timeline CHECKER.py OUTPUT_DIR\n");
        return 2;
    }
    g_checker = argv[1];
    g_dir = argv[2];
    mp_init();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_timeline_records_every_op)};
    if (cmocka_run_group_tests(tests, NULL, NULL) != 0) return 1;
    mp_finalize();
    return 0;
}
