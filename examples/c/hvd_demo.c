/* SPDX-License-Identifier: Apache-2.0 */
/* The libhvd demo: run with `hvdrun -np 4 ./hvd_demo`.
 * Each rank allreduces, allgathers and broadcasts real tensors, checks every result against
 * what it computes itself from the other ranks' known inputs, and rank 0 prints a short
 * allreduce bandwidth line. Exit status 0 only if every check passed on this rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hvd/hvd.h>

static int32_t rank, size;
static hvd_context_h ctx;

static void check(hvd_status_t s, const char *what) {
    if (s == HVD_OK) return;
    char detail[1024];
    hvd_last_error(detail, sizeof detail);
    fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, what, hvd_status_name(s), detail);
    exit(1);
}

static hvd_tensor_t tensor(void *data, int32_t dtype, int32_t ndim, const int64_t *shape) {
    hvd_tensor_t t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.shape = shape;
    t.device_type = HVD_DEVICE_CPU;
    return t;
}

static void run(hvd_request_h req, const char *what) {
    check(hvd_request_wait(req, 60000), what);
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Average of a gradient-like vector: rank r holds (r + 1) * i. */
static int demo_allreduce(void) {
    enum { N = 8 };
    float grad[N];
    for (int i = 0; i < N; ++i)
        grad[i] = (float)((rank + 1) * i);
    int64_t shape[1] = {N};
    hvd_tensor_t t = tensor(grad, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = {0};
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP;
    p.name = "demo.grad";
    p.reduce_op = HVD_OP_AVERAGE;
    hvd_request_h req;
    check(hvd_allreduce_enqueue(ctx, &t, &t, &p, &req), "allreduce enqueue");
    run(req, "allreduce");
    hvd_request_release(req);
    int ok = 1;
    for (int i = 0; i < N; ++i) {
        float want = (float)i * (size + 1) / 2.0f;
        if (fabsf(grad[i] - want) > 1e-5f) ok = 0;
    }
    if (rank == 0)
        printf("allreduce (average of (rank+1)*i): [%g %g %g ... %g]  %s\n", grad[0], grad[1],
               grad[2], grad[N - 1], ok ? "correct" : "WRONG");
    return ok;
}

/* Ragged allgather: rank r contributes r + 1 rows of [r, r]. */
static int demo_allgather(void) {
    int64_t rows = rank + 1;
    int32_t mine[2 * 64];
    for (int64_t i = 0; i < 2 * rows; ++i)
        mine[i] = rank;
    int64_t shape[2] = {rows, 2};
    hvd_tensor_t t = tensor(mine, HVD_DTYPE_INT32, 2, shape);
    hvd_request_h req;
    check(hvd_allgather_enqueue(ctx, &t, NULL, &req), "allgather enqueue");
    run(req, "allgather");
    hvd_tensor_t out;
    check(hvd_request_output(req, 0, &out), "allgather output");
    const int32_t *v = (const int32_t *)out.data;
    int ok = out.ndim == 2 && out.shape[0] == (int64_t)size * (size + 1) / 2 && out.shape[1] == 2;
    int64_t pos = 0;
    for (int r = 0; ok && r < size; ++r)
        for (int i = 0; i < 2 * (r + 1); ++i)
            if (v[pos++] != r) ok = 0;
    if (rank == 0) {
        printf("allgather (rank r sends r+1 rows of r): shape [%lld,%lld] rows:",
               (long long)out.shape[0], (long long)out.shape[1]);
        for (int64_t i = 0; i < out.shape[0]; ++i)
            printf(" %d", v[2 * i]);
        printf("  %s\n", ok ? "correct" : "WRONG");
    }
    hvd_request_release(req);
    return ok;
}

/* Broadcast of initial weights from the last rank. */
static int demo_broadcast(void) {
    enum { N = 5 };
    double w[N];
    int32_t root = size - 1;
    for (int i = 0; i < N; ++i)
        w[i] = rank == root ? 0.5 * i + root : -1.0;
    int64_t shape[1] = {N};
    hvd_tensor_t t = tensor(w, HVD_DTYPE_FLOAT64, 1, shape);
    hvd_op_params_t p = {0};
    p.field_mask = HVD_OP_FIELD_ROOT;
    p.root_rank = root;
    hvd_request_h req;
    check(hvd_broadcast_enqueue(ctx, &t, &t, &p, &req), "broadcast enqueue");
    run(req, "broadcast");
    hvd_request_release(req);
    int ok = 1;
    for (int i = 0; i < N; ++i)
        if (w[i] != 0.5 * i + root) ok = 0;
    if (rank == 0)
        printf("broadcast from rank %d: [%g %g %g %g %g]  %s\n", root, w[0], w[1], w[2], w[3], w[4],
               ok ? "correct" : "WRONG");
    return ok;
}

/* Median time of a 64 MiB float32 sum allreduce, as algbw and busbw (nccl-tests style). */
static void demo_bandwidth(void) {
    const size_t count = (64u << 20) / sizeof(float);
    float *buf = malloc(count * sizeof(float));
    if (!buf) return;
    for (size_t i = 0; i < count; ++i)
        buf[i] = 1.0f;
    int64_t shape[1] = {(int64_t)count};
    hvd_tensor_t t = tensor(buf, HVD_DTYPE_FLOAT32, 1, shape);
    enum { ITERS = 5 };
    double times[ITERS];
    for (int it = -1; it < ITERS; ++it) { /* iteration -1 warms up: page faults, buffers */
        hvd_request_h req;
        double t0 = seconds();
        check(hvd_allreduce_enqueue(ctx, &t, &t, NULL, &req), "allreduce enqueue");
        run(req, "allreduce");
        if (it >= 0) times[it] = seconds() - t0;
        hvd_request_release(req);
    }
    for (int i = 1; i < ITERS; ++i)
        for (int j = i; j > 0 && times[j] < times[j - 1]; --j) {
            double tmp = times[j];
            times[j] = times[j - 1];
            times[j - 1] = tmp;
        }
    double med = times[ITERS / 2];
    double algbw = count * sizeof(float) / med / 1e9;
    if (rank == 0)
        printf(
            "bandwidth: 64 MiB float32 allreduce on %d ranks: %.1f ms, algbw %.2f GB/s, "
            "busbw %.2f GB/s\n",
            size, med * 1e3, algbw, algbw * 2.0 * (size - 1) / size);
    free(buf);
}

int main(void) {
    check(hvd_init(NULL, &ctx), "hvd_init");
    check(hvd_rank(ctx, NULL, &rank), "hvd_rank");
    check(hvd_size(ctx, NULL, &size), "hvd_size");
    if (rank == 0) printf("libhvd %s: %d ranks\n", hvd_version_string(), size);
    int ok = demo_allreduce() & demo_allgather() & demo_broadcast();
    demo_bandwidth();
    check(hvd_finalize(ctx), "hvd_finalize");
    if (!ok) fprintf(stderr, "rank %d: a result was WRONG\n", rank);
    return ok ? 0 : 1;
}
