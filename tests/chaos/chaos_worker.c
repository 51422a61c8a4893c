/* SPDX-License-Identifier: Apache-2.0 */
/* One rank of a chaos job (scripts/chaos.py): runs a stream of mixed collectives (allreduce,
 * allgather, broadcast, alltoall, reducescatter, grouped allreduce) of sizes from 4 bytes to
 * a few MiB, the same sequence on every rank, and checks every result against a reference it
 * computes itself. The driver harms one rank at a random moment; this program reports how the
 * others saw it.
 *
 *   chaos_worker DIR SEED SECONDS
 *
 * Writes DIR/rank-R.pid at start, then DIR/rank-R.result with one line:
 *   "done OPS"                      every op of SECONDS seconds succeeded
 *   "error STATUS OPS T_MS MSG"     an op failed with STATUS; T_MS: CLOCK_REALTIME in ms
 *   "wrong OPS WHAT"                a result differed from the reference (exit code 4)
 * Exit codes: 0 done, 3 error, 4 wrong result, 1 setup failure. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mp_check.h"

static const char *g_dir;
static long g_ops;

static double realtime_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double monotonic_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes DIR/rank-R.<what> atomically (a temporary file renamed), so the driver never reads
 * half a line. */
static void write_file(const char *what, const char *fmt, ...) {
    char path[4096], tmp[4200], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/rank-%d.%s", g_dir, mp_rank, what);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "rank %d: cannot write %s: %s\n", mp_rank, tmp, strerror(errno));
        exit(1);
    }
    fprintf(f, "%s\n", line);
    fclose(f);
    rename(tmp, path);
}

static void finish_with_error(hvd_status_t s, hvd_request_h req) {
    char msg[512] = "";
    if (req != NULL)
        hvd_request_message(req, msg, sizeof msg);
    else
        hvd_last_error(msg, sizeof msg);
    for (char *p = msg; *p; ++p)
        if (*p == '\n') *p = ' ';
    write_file("result", "error %s %ld %.1f %s", hvd_status_name(s), g_ops, realtime_ms(), msg);
    /* Leave without hvd_finalize's goodbye to a job that is already broken: the driver checks
     * that this process ends promptly, and finalize is covered by the peer-failure tests. */
    _exit(3);
}

static void wrong(const char *what, long index, double got, double want) {
    write_file("result", "wrong %ld %s: element %ld is %g, expected %g", g_ops, what, index, got,
               want);
    fprintf(stderr, "rank %d: wrong %s result at element %ld: %g, expected %g\n", mp_rank, what,
            index, got, want);
    _exit(4);
}

/* splitmix64: the op stream every rank draws the same way from the seed. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Element counts spread over 1 .. 1 Mi, log-uniformly. */
static int64_t draw_count(uint64_t *state) {
    int bits = (int)(next_random(state) % 21);
    return 1 + (int64_t)(next_random(state) % ((uint64_t)1 << bits));
}

static hvd_op_params_t params(const char *name, int32_t op, int32_t root) {
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP | HVD_OP_FIELD_ROOT;
    p.name = name;
    p.reduce_op = op;
    p.root_rank = root;
    return p;
}

/* Waits for req; any failure ends the run. A wait far beyond any op timeout the driver sets is
 * itself a finding: it is reported as an error of its own kind. */
static void wait_ok(hvd_request_h req) {
    hvd_status_t s = hvd_request_wait(req, 120000);
    if (s == HVD_INPROGRESS) {
        write_file("result", "error WAIT_EXPIRED %ld %.1f the wait ran 120 s", g_ops,
                   realtime_ms());
        _exit(3);
    }
    if (s != HVD_OK) finish_with_error(s, req);
}

static void enqueued(hvd_status_t s) {
    if (s != HVD_OK) finish_with_error(s, NULL);
}

/* The library-owned output of a completed request. */
static hvd_tensor_t output_of(hvd_request_h req) {
    hvd_tensor_t out;
    hvd_status_t s = hvd_request_output(req, 0, &out);
    if (s != HVD_OK) finish_with_error(s, req);
    return out;
}

static void run_allreduce(const char *name, int64_t n) {
    float *buf = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; ++i)
        buf[i] = (float)(mp_rank + 1 + i % 7);
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, &n);
    hvd_op_params_t p = params(name, HVD_OP_SUM, 0);
    hvd_request_h req;
    enqueued(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req));
    wait_ok(req);
    double ranks = (double)mp_size * (mp_size + 1) / 2;
    for (int64_t i = 0; i < n; ++i) {
        double want = ranks + (double)mp_size * (double)(i % 7);
        if ((double)buf[i] != want) wrong("allreduce", i, buf[i], want);
    }
    hvd_request_release(req);
    free(buf);
}

static void run_grouped_allreduce(const char *name, int64_t n) {
    enum { kParts = 4 };
    int32_t *bufs[kParts];
    int64_t lens[kParts];
    hvd_tensor_t ts[kParts];
    const hvd_tensor_t *ptrs[kParts];
    for (int k = 0; k < kParts; ++k) {
        lens[k] = n / kParts + k;
        bufs[k] = malloc((size_t)(lens[k] + 1) * sizeof(int32_t));
        for (int64_t i = 0; i < lens[k]; ++i)
            bufs[k][i] = mp_rank * 3 + k + (int32_t)(i % 5);
        ts[k] = mp_tensor(bufs[k], HVD_DTYPE_INT32, 1, &lens[k]);
        ptrs[k] = &ts[k];
    }
    hvd_op_params_t p = params(name, HVD_OP_MAX, 0);
    hvd_request_h req;
    enqueued(hvd_grouped_allreduce_enqueue(mp_ctx, ptrs, ptrs, kParts, &p, &req));
    wait_ok(req);
    for (int k = 0; k < kParts; ++k) {
        for (int64_t i = 0; i < lens[k]; ++i) {
            double want = (mp_size - 1) * 3 + k + (double)(i % 5);
            if (bufs[k][i] != want) wrong("grouped allreduce", i, bufs[k][i], want);
        }
        free(bufs[k]);
    }
    hvd_request_release(req);
}

static void run_allgather(const char *name, int64_t n) {
    int64_t rows = n / mp_size + mp_rank; /* ragged: rank r contributes r more rows */
    int64_t shape[2] = {rows, 2};
    int32_t *buf = malloc((size_t)(rows * 2 + 1) * sizeof(int32_t));
    for (int64_t i = 0; i < rows * 2; ++i)
        buf[i] = mp_rank * 1000003 + (int32_t)i;
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_INT32, 2, shape);
    hvd_op_params_t p = params(name, 0, 0);
    p.field_mask = HVD_OP_FIELD_NAME;
    hvd_request_h req;
    enqueued(hvd_allgather_enqueue(mp_ctx, &t, &p, &req));
    wait_ok(req);
    hvd_tensor_t out = output_of(req);
    const int32_t *got = out.data;
    int64_t at = 0;
    for (int32_t r = 0; r < mp_size; ++r) {
        int64_t their = (n / mp_size + r) * 2;
        for (int64_t i = 0; i < their; ++i, ++at) {
            double want = (double)r * 1000003 + (double)i;
            if (got[at] != want) wrong("allgather", at, got[at], want);
        }
    }
    if (out.shape[0] * 2 != at) wrong("allgather rows", 0, (double)out.shape[0], (double)at / 2);
    hvd_request_release(req);
    free(buf);
}

static void run_broadcast(const char *name, int64_t n, int32_t root) {
    double *buf = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; ++i)
        buf[i] = mp_rank == root ? (double)i * 0.5 + root : -1.0;
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT64, 1, &n);
    hvd_op_params_t p = params(name, 0, root);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_ROOT;
    hvd_request_h req;
    enqueued(hvd_broadcast_enqueue(mp_ctx, &t, &t, &p, &req));
    wait_ok(req);
    for (int64_t i = 0; i < n; ++i)
        if (buf[i] != (double)i * 0.5 + root) wrong("broadcast", i, buf[i], (double)i * 0.5 + root);
    hvd_request_release(req);
    free(buf);
}

static void run_alltoall(const char *name, int64_t n) {
    int64_t per = n / mp_size + 1;
    int64_t rows = per * mp_size;
    int32_t *buf = malloc((size_t)rows * sizeof(int32_t));
    for (int64_t i = 0; i < rows; ++i)
        buf[i] = mp_rank * 1000003 + (int32_t)i;
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_INT32, 1, &rows);
    hvd_op_params_t p = params(name, 0, 0);
    p.field_mask = HVD_OP_FIELD_NAME;
    hvd_request_h req;
    enqueued(hvd_alltoall_enqueue(mp_ctx, &t, &p, &req));
    wait_ok(req);
    hvd_tensor_t out = output_of(req);
    const int32_t *got = out.data;
    for (int32_t r = 0; r < mp_size; ++r)
        for (int64_t i = 0; i < per; ++i) {
            double want = (double)r * 1000003 + (double)(mp_rank * per + i);
            if (got[r * per + i] != want) wrong("alltoall", r * per + i, got[r * per + i], want);
        }
    hvd_request_release(req);
    free(buf);
}

static void run_reducescatter(const char *name, int64_t n) {
    int64_t rows = n + mp_size;
    float *buf = malloc((size_t)rows * sizeof(float));
    for (int64_t i = 0; i < rows; ++i)
        buf[i] = (float)(mp_rank + i % 11);
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, &rows);
    hvd_op_params_t p = params(name, HVD_OP_SUM, 0);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_REDUCE_OP;
    hvd_request_h req;
    enqueued(hvd_reducescatter_enqueue(mp_ctx, &t, &p, &req));
    wait_ok(req);
    hvd_tensor_t out = output_of(req);
    int64_t base = rows / mp_size, extra = rows % mp_size;
    int64_t first = mp_rank * base + (mp_rank < extra ? mp_rank : extra);
    const float *got = out.data;
    for (int64_t i = 0; i < out.shape[0]; ++i) {
        double want = (double)mp_size * (mp_size - 1) / 2 + (double)mp_size * ((first + i) % 11);
        if ((double)got[i] != want) wrong("reducescatter", i, got[i], want);
    }
    hvd_request_release(req);
    free(buf);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: chaos_worker DIR SEED SECONDS\n");
        return 1;
    }
    g_dir = argv[1];
    uint64_t state = strtoull(argv[2], NULL, 10);
    double seconds = atof(argv[3]);
    mp_init();
    write_file("pid", "%ld", (long)getpid());

    double end = monotonic_s() + seconds;
    char name[64];
    /* Every rank runs the same number of ops: rank 0's clock decides when to stop, and the
     * decision travels with the data (a broadcast of the op count) so no rank waits alone. */
    for (;;) {
        snprintf(name, sizeof name, "chaos.%ld", g_ops);
        int64_t n = draw_count(&state);
        int kind = (int)(next_random(&state) % 6);
        int32_t root = (int32_t)(next_random(&state) % (uint64_t)mp_size);
        switch (kind) {
            case 0:
                run_allreduce(name, n);
                break;
            case 1:
                run_grouped_allreduce(name, n);
                break;
            case 2:
                run_allgather(name, n);
                break;
            case 3:
                run_broadcast(name, n, root);
                break;
            case 4:
                run_alltoall(name, n);
                break;
            default:
                run_reducescatter(name, n);
                break;
        }
        ++g_ops;
        if (g_ops % 16 == 0) {
            int32_t stop = monotonic_s() > end ? 1 : 0;
            int64_t one = 1;
            hvd_tensor_t t = mp_tensor(&stop, HVD_DTYPE_INT32, 1, &one);
            snprintf(name, sizeof name, "chaos.stop.%ld", g_ops);
            hvd_op_params_t p = params(name, 0, 0);
            p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_ROOT;
            hvd_request_h req;
            enqueued(hvd_broadcast_enqueue(mp_ctx, &t, &t, &p, &req));
            wait_ok(req);
            hvd_request_release(req);
            if (stop) break;
        }
    }
    write_file("result", "done %ld", g_ops);
    mp_finalize();
    return 0;
}
