/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mpi_allreduce_perf.c - nccl-tests style collective benchmark over MPI.
 *
 *   mpirun -np 2 ./mpi_allreduce_perf [options]
 *
 *   -c allreduce|allgather|broadcast   collective (default allreduce)
 *   -b MIN -e MAX -f FACTOR            size sweep (default 8 .. 256M, x4)
 *   -x LIST                            extra sizes, comma separated
 *                                      (default 64M, "none" to disable)
 *   -i 0|1                             in-place (MPI_IN_PLACE), default 1
 *   -r ROOT                            broadcast root (default 0)
 *   -t SECONDS                         timed time per size (default 0.3;
 *                                      at least 3 timed iterations)
 *   -w N                               warm-up iterations (default 2;
 *                                      1 for sizes >= 32 MiB)
 *   -m MAXITERS                        cap on timed iterations (default 1e6)
 *   -C 0|1                             check results (default 1)
 *   -v                                 print iteration counts as comments
 *
 * Output: see bench_common.h.  size_bytes is the buffer size of the
 * collective as in nccl-tests: for allgather it is the total (gathered)
 * output size.  Exit status 1 if any result was wrong.
 *
 * Correctness: every rank fills its input with bench_val(rank, i); after
 * the first (warm-up) operation and after the timed loop the output is
 * compared element by element with the exact expected value.  Outputs are
 * reset to a sentinel before the timed loop, so an operation that silently
 * does nothing is detected.  For in-place allreduce the data grows every
 * iteration, so the post-timing check re-initialises and runs one more
 * operation (nccl-tests does the same).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <unistd.h>

#include "bench_common.h"

enum { COLL_ALLREDUCE = 0, COLL_ALLGATHER = 1, COLL_BROADCAST = 2 };
static const char *coll_names[] = {"allreduce", "allgather", "broadcast"};

static int g_rank, g_n, g_coll = COLL_ALLREDUCE, g_inplace = 1, g_root = 0;
static float *g_sbuf, *g_rbuf;

static void die(const char *msg) {
    if (g_rank == 0) fprintf(stderr, "mpi_allreduce_perf: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void do_op(size_t count) {
    int rc = MPI_SUCCESS;
    switch (g_coll) {
        case COLL_ALLREDUCE:
            rc = MPI_Allreduce(g_inplace ? MPI_IN_PLACE : (void *)g_sbuf, g_rbuf, (int)count,
                               MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            break;
        case COLL_ALLGATHER: {
            int c = (int)(count / (size_t)g_n);
            rc = MPI_Allgather(g_inplace ? MPI_IN_PLACE : (void *)g_sbuf, c, MPI_FLOAT, g_rbuf, c,
                               MPI_FLOAT, MPI_COMM_WORLD);
            break;
        }
        case COLL_BROADCAST:
            rc = MPI_Bcast(g_rbuf, (int)count, MPI_FLOAT, g_root, MPI_COMM_WORLD);
            break;
    }
    if (rc != MPI_SUCCESS) die("MPI call failed");
}

/* Full initialisation of inputs and (sentinel) outputs. */
static void init_data(size_t count) {
    size_t i;
    if (g_coll == COLL_ALLREDUCE) {
        float *in = g_inplace ? g_rbuf : g_sbuf;
        for (i = 0; i < count; i++)
            in[i] = bench_val(g_rank, i);
        if (!g_inplace)
            for (i = 0; i < count; i++)
                g_rbuf[i] = BENCH_SENTINEL;
    } else if (g_coll == COLL_ALLGATHER) {
        size_t c = count / (size_t)g_n;
        float *in = g_inplace ? g_rbuf + (size_t)g_rank * c : g_sbuf;
        for (i = 0; i < count; i++)
            g_rbuf[i] = BENCH_SENTINEL;
        for (i = 0; i < c; i++)
            in[i] = bench_val(g_rank, i);
    } else {
        for (i = 0; i < count; i++)
            g_rbuf[i] = g_rank == g_root ? bench_val(g_root, i) : BENCH_SENTINEL;
    }
}

/* Reset outputs before the timed loop (inputs are left alone). */
static void reset_outputs(size_t count) {
    size_t i;
    if (g_coll == COLL_ALLREDUCE) {
        if (g_inplace)
            init_data(count);
        else
            for (i = 0; i < count; i++)
                g_rbuf[i] = BENCH_SENTINEL;
    } else if (g_coll == COLL_ALLGATHER) {
        size_t c = count / (size_t)g_n;
        for (i = 0; i < count; i++)
            if (!(g_inplace && i / c == (size_t)g_rank)) g_rbuf[i] = BENCH_SENTINEL;
    } else if (g_rank != g_root) {
        for (i = 0; i < count; i++)
            g_rbuf[i] = BENCH_SENTINEL;
    }
}

/* Returns the number of wrong elements on this rank; reports the first. */
static long check(size_t count, size_t bytes, const char *when) {
    long wrong = 0;
    size_t i, first = 0;
    float got = 0, want = 0;
    if (g_coll == COLL_ALLREDUCE) {
        float expect[64];
        int k, r;
        for (k = 0; k < 64; k++) {
            float s = 0;
            for (r = 0; r < g_n; r++)
                s += bench_val(r, (size_t)k);
            expect[k] = s;
        }
        for (i = 0; i < count; i++)
            if (g_rbuf[i] != expect[i & 63]) {
                if (!wrong++) {
                    first = i;
                    got = g_rbuf[i];
                    want = expect[i & 63];
                }
            }
    } else if (g_coll == COLL_ALLGATHER) {
        size_t c = count / (size_t)g_n;
        for (i = 0; i < count; i++) {
            float e = bench_val((int)(i / c), i % c);
            if (g_rbuf[i] != e) {
                if (!wrong++) {
                    first = i;
                    got = g_rbuf[i];
                    want = e;
                }
            }
        }
    } else {
        for (i = 0; i < count; i++) {
            float e = bench_val(g_root, i);
            if (g_rbuf[i] != e) {
                if (!wrong++) {
                    first = i;
                    got = g_rbuf[i];
                    want = e;
                }
            }
        }
    }
    if (wrong)
        fprintf(stderr,
                "# ERROR rank %d size %zu (%s): %ld wrong elements, first at %zu: got %g "
                "expected %g\n",
                g_rank, bytes, when, wrong, first, (double)got, (double)want);
    return wrong;
}

static void usage(void) {
    if (g_rank == 0)
        fprintf(stderr,
                "usage: mpi_allreduce_perf [-c allreduce|allgather|broadcast] [-b MIN] [-e MAX]\n"
                "       [-f FACTOR] [-x EXTRA,...|none] [-i 0|1] [-r ROOT] [-t SEC] [-w N]\n"
                "       [-m MAXITERS] [-C 0|1] [-v]\n");
}

int main(int argc, char **argv) {
    size_t minb, maxb, sizes[BENCH_MAX_SIZES], maxcount;
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S, busfactor;
    const char *extra = BENCH_DEFAULT_EXTRA, *opname;
    int nsizes, si, opt, warmup = 2, do_check = 1, verbose = 0;
    long maxit = 1000000, total_wrong = 0;
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int verlen = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_n);
    minb = bench_parse_size(BENCH_DEFAULT_MIN);
    maxb = bench_parse_size(BENCH_DEFAULT_MAX);

    struct bench_opts common = {&minb,  &maxb,     &factor,    &extra,  &target, &warmup,
                                &maxit, &do_check, &g_inplace, &g_root, &verbose};
    while ((opt = getopt(argc, argv, "c:b:e:f:x:i:r:t:w:m:C:vh")) != -1) {
        switch (opt) {
            case 'c':
                if (!strcmp(optarg, "allreduce"))
                    g_coll = COLL_ALLREDUCE;
                else if (!strcmp(optarg, "allgather"))
                    g_coll = COLL_ALLGATHER;
                else if (!strcmp(optarg, "broadcast") || !strcmp(optarg, "bcast"))
                    g_coll = COLL_BROADCAST;
                else {
                    usage();
                    die("bad -c");
                }
                break;
            default:
                if (bench_option(opt, optarg, &common)) break;
                usage();
                die("bad option");
        }
    }
    if (g_root < 0 || g_root >= g_n) die("bad root");
    if (warmup < 1) warmup = 1;
    if (maxit < 1) maxit = 1;
    nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) {
        usage();
        die("bad size list");
    }

    maxcount = sizes[nsizes - 1] / sizeof(float);
    if (maxcount < (size_t)g_n) maxcount = (size_t)g_n;
    if (maxcount > (size_t)INT32_MAX) die("size too large for int counts");
    if (posix_memalign((void **)&g_rbuf, 4096, maxcount * sizeof(float)) ||
        posix_memalign((void **)&g_sbuf, 4096, maxcount * sizeof(float)))
        die("out of memory");
    memset(g_rbuf, 0, maxcount * sizeof(float)); /* first touch */
    memset(g_sbuf, 0, maxcount * sizeof(float));

    busfactor = g_coll == COLL_ALLREDUCE   ? 2.0 * (g_n - 1) / g_n
                : g_coll == COLL_ALLGATHER ? (double)(g_n - 1) / g_n
                                           : 1.0;
    opname = g_coll == COLL_ALLREDUCE ? "sum" : "none";
    if (g_coll == COLL_BROADCAST) g_inplace = 1;

    MPI_Get_library_version(ver, &verlen);
    if (verlen > 0 && ver[verlen - 1] == '\n') ver[verlen - 1] = '\0';
    {
        char *nl = strchr(ver, '\n');
        if (nl) *nl = '\0';
    }
    if (g_rank == 0) {
        printf(
            "# mpi_allreduce_perf: coll=%s nranks=%d inplace=%d dtype=float32 target_s=%.2f "
            "warmup=%d check=%d\n# mpi: %s\n",
            coll_names[g_coll], g_n, g_inplace, target, warmup, do_check, ver);
        printf("%s\n", BENCH_HEADER);
        fflush(stdout);
    }

    for (si = 0; si < nsizes; si++) {
        size_t count = sizes[si] / sizeof(float), bytes;
        long it, iters, wrong = 0, w, k, flt;
        int nwarm = sizes[si] >= ((size_t)32 << 20) ? 1 : warmup;
        double t0, dt;
        if (count < 1) count = 1;
        if (g_coll == COLL_ALLGATHER) {
            count -= count % (size_t)g_n;
            if (count < (size_t)g_n) count = (size_t)g_n;
        }
        bytes = count * sizeof(float);

        /* warm-up (first op is checked) */
        init_data(count);
        MPI_Barrier(MPI_COMM_WORLD);
        do_op(count);
        if (do_check) wrong += check(count, bytes, "warm-up");
        for (w = 1; w < nwarm; w++)
            do_op(count);

        /* calibration: all ranks agree on the (max) elapsed time */
        for (it = 1;;) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = bench_now();
            for (k = 0; k < it; k++)
                do_op(count);
            dt = bench_now() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (dt >= BENCH_CALIB_MIN_S || it >= maxit) break;
            it = bench_calib_next(it, dt, maxit);
        }
        iters = bench_iters_for(dt / (double)it, target, maxit);

        /* timed */
        reset_outputs(count);
        MPI_Barrier(MPI_COMM_WORLD);
        flt = bench_minflt();
        t0 = bench_now();
        for (k = 0; k < iters; k++)
            do_op(count);
        dt = (bench_now() - t0) / (double)iters;
        flt = bench_minflt() - flt;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

        if (do_check) {
            if (g_coll == COLL_ALLREDUCE && g_inplace) {
                init_data(count);
                MPI_Barrier(MPI_COMM_WORLD);
                do_op(count);
            }
            wrong += check(count, bytes, "timed");
        }
        MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        total_wrong += wrong;
        if (g_rank == 0) {
            bench_print_line(bytes, count, "float32", opname, dt, busfactor);
            if (wrong) printf("# ERROR size %zu: %ld wrong elements (all ranks)\n", bytes, wrong);
            if (verbose)
                printf("#   iters=%ld rank0_minor_faults_per_iter=%.1f\n", iters,
                       (double)flt / (double)iters);
            fflush(stdout);
        }
    }
    if (g_rank == 0) {
        printf("# errors: %ld%s\n", total_wrong, do_check ? "" : " (check disabled)");
        fflush(stdout);
    }
    free(g_sbuf);
    free(g_rbuf);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
