/* SPDX-License-Identifier: Apache-2.0 */
/* A program that knows libhvd only through its installed packages: built once with
 * `pkg-config --cflags --libs hvd` and once with find_package(hvd), run under the packaged
 * hvdrun with 2 ranks. Each rank checks that the loaded library is the one the header
 * describes, then allreduces (rank + 1) * (i + 1) and compares with the closed form
 * (i + 1) * n(n + 1)/2. Prints "rank R of N: ... ok" and exits 0 only if every check held. */
#include <stdio.h>
#include <string.h>

#include <hvd/hvd.h>

enum { N = 1000 };

static int fail(int32_t rank, const char *what, hvd_status_t s) {
    char detail[512];
    hvd_last_error(detail, sizeof detail);
    fprintf(stderr, "rank %d: %s: %s (%s)\n", (int)rank, what, hvd_status_name(s), detail);
    return 1;
}

static int check_allreduce(hvd_context_h ctx, int32_t rank, int32_t size) {
    static double values[N];
    for (int i = 0; i < N; ++i)
        values[i] = (double)(rank + 1) * (i + 1);
    int64_t shape[1] = {N};
    hvd_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = values;
    t.dtype = HVD_DTYPE_FLOAT64;
    t.ndim = 1;
    t.shape = shape;
    hvd_op_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP;
    p.name = "packaging.consumer";
    p.reduce_op = HVD_OP_SUM;
    hvd_request_h req;
    hvd_status_t s = hvd_allreduce_enqueue(ctx, &t, &t, &p, &req);
    if (s != HVD_OK) return fail(rank, "allreduce enqueue", s);
    s = hvd_request_wait(req, 60000);
    hvd_request_release(req);
    if (s != HVD_OK) return fail(rank, "allreduce", s);
    for (int i = 0; i < N; ++i) {
        double want = (double)(i + 1) * size * (size + 1) / 2.0;
        if (values[i] != want) {
            fprintf(stderr, "rank %d: allreduce element %d is %g, expected %g\n", (int)rank, i,
                    values[i], want);
            return 1;
        }
    }
    return 0;
}

int main(void) {
    if (strcmp(hvd_version_string(), HVD_VERSION_STRING) != 0 ||
        hvd_version() != HVD_VERSION_CODE) {
        fprintf(stderr, "header is version %s, the loaded library %s\n", HVD_VERSION_STRING,
                hvd_version_string());
        return 1;
    }
    hvd_context_h ctx;
    hvd_status_t s = hvd_init(NULL, &ctx);
    if (s != HVD_OK) return fail(-1, "hvd_init", s);
    int32_t rank = -1, size = 0;
    int bad = hvd_rank(ctx, NULL, &rank) != HVD_OK || hvd_size(ctx, NULL, &size) != HVD_OK;
    if (!bad) bad = check_allreduce(ctx, rank, size);
    s = hvd_finalize(ctx);
    if (s != HVD_OK) bad |= fail(rank, "hvd_finalize", s);
    if (!bad)
        printf("rank %d of %d: libhvd %s, allreduce of %d doubles ok\n", (int)rank, (int)size,
               hvd_version_string(), N);
    return bad;
}
