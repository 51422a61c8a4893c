/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memcpy_bw.c - copy bandwidth reference for the collective benchmarks.
 *
 *   ./memcpy_bw [-p NPROC] [-o memcpy|sum] [-b MIN] [-e MAX] [-f FACTOR]
 *               [-x EXTRA,...|none] [-t SECONDS] [-B 0|1]
 *
 *   -p NPROC   number of concurrent processes (fork), each copying its own
 *              private buffers (default 1)
 *   -o memcpy  dst = src with glibc memcpy (default)
 *   -o sum     c[i] = a[i] + b[i] (float32): the element-wise reduction
 *              step of an allreduce (2 reads + 1 write per element)
 *   -B 1       pin process k to CPU k (default 1 when NPROC <= #CPUs)
 *
 * Output uses the collective benchmarks' format (bench_common.h):
 *
 *   size_bytes count dtype op time_us algbw_GBps busbw_GBps
 *
 * with, for this program:
 *   size_bytes  bytes written per call (= bytes copied)
 *   time_us     time per call, MAX over processes
 *   algbw_GBps  size / time_us  for ONE process (copy rate; memory traffic
 *               is 2x (read+write) or 3x with read-for-ownership)
 *   busbw_GBps  aggregate over all NPROC processes (= NPROC * algbw)
 *
 * All processes start each size together (process-shared barrier), run the
 * same number of calls (calibrated under contention), and the slowest one
 * defines the time, so the aggregate is not inflated by unequal windows.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define MAXP 64

struct shared {
    pthread_barrier_t bar;
    double dt[MAXP];
    long errors;
};

static struct shared *g_sh;
static int g_np = 1, g_op = 0; /* 0 memcpy, 1 sum */

/* Called through a volatile pointer so that small copies are real calls. */
static void *(*volatile g_memcpy)(void *, const void *, size_t) = memcpy;

__attribute__((noinline)) static void sum_kernel(float *restrict c, const float *restrict a,
                                                 const float *restrict b, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

static void do_op(float *dst, const float *src, const float *src2, size_t bytes) {
    if (g_op == 0)
        g_memcpy(dst, src, bytes);
    else
        sum_kernel(dst, src, src2, bytes / sizeof(float));
    __asm__ __volatile__("" ::: "memory");
}

static double max_over_procs(int me, double v) {
    int k;
    double m = 0;
    g_sh->dt[me] = v;
    pthread_barrier_wait(&g_sh->bar);
    for (k = 0; k < g_np; k++)
        if (g_sh->dt[k] > m) m = g_sh->dt[k];
    pthread_barrier_wait(&g_sh->bar);
    return m;
}

static int worker(int me, const size_t *sizes, int nsizes, double target, int bind) {
    size_t maxb = sizes[nsizes - 1], i;
    float *src, *dst, *src2 = NULL;
    int si;
    long errors = 0;
    if (bind) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(me, &set);
        if (sched_setaffinity(0, sizeof(set), &set)) perror("sched_setaffinity");
    }
    if (posix_memalign((void **)&src, 4096, maxb) || posix_memalign((void **)&dst, 4096, maxb) ||
        (g_op == 1 && posix_memalign((void **)&src2, 4096, maxb))) {
        fprintf(stderr, "memcpy_bw: out of memory\n");
        return 1;
    }
    for (i = 0; i < maxb / sizeof(float); i++) {
        src[i] = bench_val(me, i);
        dst[i] = 0;
        if (src2) src2[i] = bench_val(me + 1, i);
    }
    if (me == 0) {
        printf("%s\n", BENCH_HEADER);
        fflush(stdout);
    }
    for (si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si], count = bytes / sizeof(float);
        long it, iters, k;
        double t0, dt;
        if (g_op == 1) { /* whole floats only */
            if (count < 1) count = 1;
            bytes = count * sizeof(float);
        }
        do_op(dst, src, src2, bytes); /* warm-up */
        for (it = 1;;) {
            pthread_barrier_wait(&g_sh->bar);
            t0 = bench_now();
            for (k = 0; k < it; k++)
                do_op(dst, src, src2, bytes);
            dt = max_over_procs(me, bench_now() - t0);
            if (dt >= BENCH_CALIB_MIN_S || it >= 1000000000L) break;
            it = bench_calib_next(it, dt, 1000000000L);
        }
        iters = bench_iters_for(dt / (double)it, target, 1000000000L);
        pthread_barrier_wait(&g_sh->bar);
        t0 = bench_now();
        for (k = 0; k < iters; k++)
            do_op(dst, src, src2, bytes);
        dt = max_over_procs(me, (bench_now() - t0) / (double)iters);
        /* correctness of the last call */
        for (i = 0; i < bytes / sizeof(float); i++) {
            float e = g_op == 0 ? src[i] : src[i] + src2[i];
            if (dst[i] != e) {
                errors++;
                break;
            }
        }
        if (g_op == 0 && bytes % sizeof(float) == 0 && bytes >= sizeof(float) &&
            memcmp(dst, src, bytes) != 0)
            errors++;
        if (me == 0) {
            double algbw = (double)bytes / dt / 1e9;
            printf("%12zu %12zu %8s %6s %12.4f %10.3f %10.3f\n", bytes, g_op == 0 ? bytes : count,
                   g_op == 0 ? "byte" : "float32", g_op == 0 ? "memcpy" : "sum", dt * 1e6, algbw,
                   algbw * g_np);
            fflush(stdout);
        }
        for (i = 0; i < bytes / sizeof(float) && i < 1024; i++)
            dst[i] = 0;
    }
    __atomic_add_fetch(&g_sh->errors, errors, __ATOMIC_SEQ_CST);
    free(src);
    free(dst);
    free(src2);
    return 0;
}

int main(int argc, char **argv) {
    size_t minb = bench_parse_size(BENCH_DEFAULT_MIN), maxb = bench_parse_size(BENCH_DEFAULT_MAX);
    size_t sizes[BENCH_MAX_SIZES];
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S;
    const char *extra = BENCH_DEFAULT_EXTRA;
    int opt, nsizes, k, bind = -1, status, rc = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    pid_t pids[MAXP];
    pthread_barrierattr_t attr;

    struct bench_opts common = {&minb, &maxb, &factor, &extra, &target, NULL,
                                NULL,  NULL,  NULL,    NULL,   NULL};
    while ((opt = getopt(argc, argv, "p:o:b:e:f:x:t:B:h")) != -1) {
        switch (opt) {
            case 'p':
                g_np = atoi(optarg);
                break;
            case 'o':
                if (!strcmp(optarg, "memcpy"))
                    g_op = 0;
                else if (!strcmp(optarg, "sum"))
                    g_op = 1;
                else {
                    fprintf(stderr, "bad -o\n");
                    return 2;
                }
                break;
            case 'B':
                bind = atoi(optarg);
                break;
            default:
                if (bench_option(opt, optarg, &common)) break;
                fprintf(stderr,
                        "usage: memcpy_bw [-p NPROC] [-o memcpy|sum] [-b MIN] [-e MAX] "
                        "[-f FACTOR] [-x EXTRA|none] [-t SEC] [-B 0|1]\n");
                return 2;
        }
    }
    if (g_np < 1 || g_np > MAXP) {
        fprintf(stderr, "bad -p\n");
        return 2;
    }
    if (bind < 0) bind = g_np <= ncpu;
    nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) {
        fprintf(stderr, "bad size list\n");
        return 2;
    }

    g_sh = mmap(NULL, sizeof(*g_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(g_sh, 0, sizeof(*g_sh));
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&g_sh->bar, &attr, (unsigned)g_np);

    printf(
        "# memcpy_bw: op=%s nproc=%d bind=%d target_s=%.2f (algbw = per-process rate, "
        "busbw = aggregate over %d processes)\n",
        g_op == 0 ? "memcpy" : "sum", g_np, bind, target, g_np);
    fflush(stdout);

    for (k = 0; k < g_np; k++) {
        pids[k] = fork();
        if (pids[k] < 0) {
            perror("fork");
            rc = 2;
            break;
        }
        if (pids[k] == 0) _exit(worker(k, sizes, nsizes, target, bind));
    }
    if (rc) { /* fork failed: children would wait forever on the barrier */
        int j;
        for (j = 0; j < k; j++)
            kill(pids[j], SIGKILL);
        for (j = 0; j < k; j++)
            waitpid(pids[j], NULL, 0);
        return rc;
    }
    { /* reap; if one worker fails the others would block on the barrier */
        int left = g_np, reaped[MAXP] = {0}, j;
        while (left > 0) {
            pid_t p = waitpid(-1, &status, 0);
            if (p < 0) break;
            for (j = 0; j < g_np; j++)
                if (pids[j] == p) {
                    reaped[j] = 1;
                    left--;
                }
            if (!WIFEXITED(status) || WEXITSTATUS(status)) {
                rc = 1;
                for (j = 0; j < g_np; j++)
                    if (!reaped[j]) kill(pids[j], SIGKILL);
            }
        }
    }
    printf("# errors: %ld\n", g_sh->errors);
    return rc || g_sh->errors ? 1 : 0;
}
