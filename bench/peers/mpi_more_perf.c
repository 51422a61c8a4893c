/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_more_perf.c - the Open MPI peer for the collectives mpi_allreduce_perf does not measure:
 * alltoall (MPI_Alltoall) and reducescatter (MPI_Reduce_scatter_block, sum). Run by
 * scripts/bench.sh beside the other peers, with their bench_common.h, flags and output:
 *
 *   mpirun -np 2 ./mpi_more_perf -c alltoall|reducescatter [-b MIN] [-e MAX] [-f FACTOR]
 *                                [-x EXTRA|none] [-t SECONDS] [-m MAXITERS] [-C 0|1]
 *
 * size_bytes is the per-rank send buffer, as in nccl-tests and hvd_bench; busbw = algbw *
 * (n-1)/n. time_us is the mean over the timed loop (as the other peers), max over ranks.
 * Out of place (libhvd's outputs of these collectives are library-owned, never in place).
 * Every output is checked element by element after the warm-up and after the timed loop.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <unistd.h>

#include "bench_common.h"

static int g_rank, g_n, g_a2a = 1;
static float *g_sbuf, *g_rbuf;

static void die(const char *msg) {
    if (g_rank == 0) fprintf(stderr, "mpi_more_perf: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* count: elements of the send buffer (a multiple of n). */
static void do_op(size_t count) {
    int c = (int)(count / (size_t)g_n), rc;
    if (g_a2a)
        rc = MPI_Alltoall(g_sbuf, c, MPI_FLOAT, g_rbuf, c, MPI_FLOAT, MPI_COMM_WORLD);
    else
        rc = MPI_Reduce_scatter_block(g_sbuf, g_rbuf, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) die("MPI call failed");
}

static void init(size_t count) {
    for (size_t i = 0; i < count; i++)
        g_sbuf[i] = bench_val(g_rank, i);
    for (size_t i = 0; i < count; i++)
        g_rbuf[i] = BENCH_SENTINEL;
}

/* Alltoall: block r of the output is block `g_rank` of rank r's input. Reducescatter: the
 * output is block `g_rank` of the sum over ranks. */
static long check(size_t count, const char *when) {
    size_t c = count / (size_t)g_n, nout = g_a2a ? count : c;
    long wrong = 0;
    for (size_t i = 0; i < nout; i++) {
        float want = 0;
        if (g_a2a) {
            want = bench_val((int)(i / c), (size_t)g_rank * c + i % c);
        } else {
            for (int r = 0; r < g_n; r++)
                want += bench_val(r, (size_t)g_rank * c + i);
        }
        if (g_rbuf[i] != want && wrong++ == 0)
            fprintf(stderr, "# ERROR rank %d count %zu (%s): element %zu is %g, expected %g\n",
                    g_rank, count, when, i, (double)g_rbuf[i], (double)want);
    }
    return wrong;
}

int main(int argc, char **argv) {
    size_t minb = bench_parse_size(BENCH_DEFAULT_MIN), maxb = bench_parse_size(BENCH_DEFAULT_MAX);
    size_t sizes[BENCH_MAX_SIZES];
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S;
    const char *extra = BENCH_DEFAULT_EXTRA;
    long maxit = 1000000, total_wrong = 0;
    int opt, do_check = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_n);
    struct bench_opts common = {&minb,  &maxb,     &factor, &extra, &target, NULL,
                                &maxit, &do_check, NULL,    NULL,   NULL};
    while ((opt = getopt(argc, argv, "c:b:e:f:x:t:m:C:")) != -1) {
        switch (opt) {
            case 'c':
                if (!strcmp(optarg, "alltoall"))
                    g_a2a = 1;
                else if (!strcmp(optarg, "reducescatter"))
                    g_a2a = 0;
                else
                    die("-c takes alltoall or reducescatter");
                break;
            default:
                if (bench_option(opt, optarg, &common)) break;
                die("bad option");
        }
    }
    int nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) die("bad size list");
    size_t maxcount = sizes[nsizes - 1] / sizeof(float) + (size_t)g_n;
    if (posix_memalign((void **)&g_sbuf, 4096, maxcount * sizeof(float)) ||
        posix_memalign((void **)&g_rbuf, 4096, maxcount * sizeof(float)))
        die("out of memory");
    memset(g_sbuf, 0, maxcount * sizeof(float)); /* first touch */
    memset(g_rbuf, 0, maxcount * sizeof(float));
    if (g_rank == 0) {
        printf(
            "# mpi_more_perf: coll=%s nranks=%d inplace=0 dtype=float32 target_s=%.2f "
            "check=%d\n%s\n",
            g_a2a ? "alltoall" : "reducescatter", g_n, target, do_check, BENCH_HEADER);
        fflush(stdout);
    }
    for (int si = 0; si < nsizes; si++) {
        size_t count = sizes[si] / sizeof(float);
        count -= count % (size_t)g_n;
        if (count < (size_t)g_n) count = (size_t)g_n;
        long wrong = 0, it, iters;
        double t0, dt;
        init(count);
        MPI_Barrier(MPI_COMM_WORLD);
        do_op(count);
        if (do_check) wrong += check(count, "warm-up");
        for (it = 1;;) { /* calibration, as bench_common.h */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = bench_now();
            for (long k = 0; k < it; k++)
                do_op(count);
            dt = bench_now() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (dt >= BENCH_CALIB_MIN_S || it >= maxit) break;
            it = bench_calib_next(it, dt, maxit);
        }
        iters = bench_iters_for(dt / (double)it, target, maxit);
        for (size_t i = 0; i < count; i++)
            g_rbuf[i] = BENCH_SENTINEL;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = bench_now();
        for (long k = 0; k < iters; k++)
            do_op(count);
        dt = (bench_now() - t0) / (double)iters;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (do_check) wrong += check(count, "timed");
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        total_wrong += wrong;
        if (g_rank == 0) {
            bench_print_line(count * sizeof(float), count, "float32", g_a2a ? "none" : "sum", dt,
                             (double)(g_n - 1) / g_n);
            if (wrong) printf("# ERROR size %zu: %ld wrong elements\n", count * 4, wrong);
        }
    }
    if (g_rank == 0) printf("# errors: %ld\n", total_wrong);
    free(g_sbuf);
    free(g_rbuf);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
