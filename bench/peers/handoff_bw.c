/* SPDX-License-Identifier: Apache-2.0 */
/*
 * handoff_bw.c - the rate at which two processes hand freshly written data to each other
 * through shared memory, the pattern of a shared-memory allreduce's staging slots.
 *
 *   ./handoff_bw [-b MIN] [-e MAX] [-f FACTOR] [-x EXTRA,...|none] [-t SECONDS] [-B 0|1]
 *
 * Two processes (fork) share a mapping with one block per process. In turns, a process reads
 * the block the other has just written (float32, every element checked) and then overwrites
 * its own block, so every byte read was written by the other CPU a moment before. One step is
 * a turn of each; -B 1 (the default) pins process k to CPU k.
 *
 * Output uses the collective benchmarks' format (bench_common.h):
 *
 *   size_bytes count dtype op time_us algbw_GBps busbw_GBps
 *
 * with, for this program: size_bytes the block, time_us one step, algbw_GBps one block per
 * step, busbw_GBps the bytes handed over per second (two blocks per step). On a host where that
 * rate drops (vCPUs placed far apart for a while), libhvd's allreduces of malloc'd tensors from 8
 * KiB to 32 MiB drop with it; run it next to hvd_bench to tell the host from the library.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define TURN_TIMEOUT_S 10.0

struct control {
    _Atomic long turn; /* even: process 0 reads and writes, odd: process 1 */
    _Atomic int failed;
    long steps; /* the next batch's steps, set by process 0 */
    long errors;
};

static struct control *g_ctl;
static float *g_block[2];

/* Waits for turn `t` (bounded); 0 when it came, -1 when the other process failed or the wait
 * passed TURN_TIMEOUT_S. */
static int wait_turn(long t) {
    double deadline = bench_now() + TURN_TIMEOUT_S;
    unsigned polls = 0;
    while (atomic_load_explicit(&g_ctl->turn, memory_order_acquire) < t) {
        if (atomic_load(&g_ctl->failed)) return -1;
        if ((++polls & 1023u) == 0 && bench_now() > deadline) {
            fprintf(stderr, "handoff_bw: the other process did not take its turn within %g s\n",
                    TURN_TIMEOUT_S);
            atomic_store(&g_ctl->failed, 1);
            return -1;
        }
    }
    return 0;
}

/* Process `me`'s part of `steps` steps of `count` floats from turn `*t`; with `check`, every
 * element read must equal the one the other process wrote (not in a size's first step, where
 * process 0 reads what the other wrote at the previous size). */
static int run_steps(int me, size_t count, long steps, int check, long *t, long *errors) {
    const float *theirs = g_block[1 - me];
    float *mine = g_block[me];
    for (long k = 0; k < steps; ++k) {
        if (wait_turn(*t + me) != 0) return -1;
        const float value = theirs[0];
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i)
            bad += theirs[i] != value;
        if (check && bad != 0) ++*errors;
        const float next = (float)((*t / 2 + me) & 7);
        for (size_t i = 0; i < count; ++i)
            mine[i] = next;
        atomic_store_explicit(&g_ctl->turn, *t + me + 1, memory_order_release);
        if (me == 0 && wait_turn(*t + 2) != 0) return -1;
        *t += 2;
    }
    return 0;
}

/* The steps of the next batch: process 0's `proposal`, handed to process 1 in one step of
 * turns; -1 when a wait failed. */
static long agree_steps(int me, long proposal, long *t) {
    if (wait_turn(*t + me) != 0) return -1;
    if (me == 0) g_ctl->steps = proposal;
    const long steps = g_ctl->steps;
    atomic_store_explicit(&g_ctl->turn, *t + me + 1, memory_order_release);
    if (me == 0 && wait_turn(*t + 2) != 0) return -1;
    *t += 2;
    return steps;
}

/* One size: warm-up, calibration and the timed batch, all timed by process 0, whose wait for
 * the last turn ends each batch. Returns process 0's time per step, or -1. */
static double measure(int me, size_t count, double target, long *t, long *errors) {
    long it = 1;
    double dt = 0;
    if (run_steps(me, count, 1, 0, t, errors) != 0) return -1; /* warm-up */
    for (;;) {
        const double t0 = bench_now();
        if (run_steps(me, count, it, 1, t, errors) != 0) return -1;
        dt = bench_now() - t0;
        const long proposal =
            dt >= BENCH_CALIB_MIN_S || it >= 100000000L ? 0 : bench_calib_next(it, dt, 100000000L);
        const long next = agree_steps(me, proposal, t); /* process 0's proposal */
        if (next < 0) return -1;
        if (next == 0) break;
        it = next;
    }
    long steps = agree_steps(me, bench_iters_for(dt / (double)it, target, 100000000L), t);
    if (steps <= 0) return -1;
    const double t0 = bench_now();
    if (run_steps(me, count, steps, 1, t, errors) != 0) return -1;
    return (bench_now() - t0) / (double)steps;
}

static int worker(int me, const size_t *sizes, int nsizes, double target, int bind) {
    long t = 0, errors = 0;
    if (bind) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(me, &set);
        if (sched_setaffinity(0, sizeof(set), &set)) perror("sched_setaffinity");
    }
    if (me == 0) printf("%s\n", BENCH_HEADER);
    for (int si = 0; si < nsizes; si++) {
        size_t count = sizes[si] / sizeof(float);
        if (count < 1) count = 1;
        const double dt = measure(me, count, target, &t, &errors);
        if (dt < 0) return 1;
        if (me == 0) bench_print_line(count * sizeof(float), count, "float32", "handoff", dt, 2.0);
    }
    __atomic_add_fetch(&g_ctl->errors, errors, __ATOMIC_SEQ_CST);
    return 0;
}

int main(int argc, char **argv) {
    size_t minb = bench_parse_size(BENCH_DEFAULT_MIN), maxb = bench_parse_size(BENCH_DEFAULT_MAX);
    size_t sizes[BENCH_MAX_SIZES];
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S;
    const char *extra = BENCH_DEFAULT_EXTRA;
    int opt, nsizes, bind = 1, status, rc = 0;
    struct bench_opts common = {&minb, &maxb, &factor, &extra, &target, NULL,
                                NULL,  NULL,  NULL,    NULL,   NULL};
    while ((opt = getopt(argc, argv, "b:e:f:x:t:B:h")) != -1) {
        if (opt == 'B') {
            bind = atoi(optarg) != 0;
        } else if (!bench_option(opt, optarg, &common)) {
            fprintf(stderr,
                    "usage: handoff_bw [-b MIN] [-e MAX] [-f FACTOR] [-x EXTRA|none] "
                    "[-t SEC] [-B 0|1]\n");
            return 2;
        }
    }
    nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) {
        fprintf(stderr, "handoff_bw: bad size list\n");
        return 2;
    }
    size_t block = (sizes[nsizes - 1] + 4095) / 4096 * 4096;
    if (block < 4096) block = 4096;
    char *m =
        mmap(NULL, 4096 + 2 * block, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("handoff_bw: mmap");
        return 1;
    }
    g_ctl = (struct control *)m;
    g_block[0] = (float *)(m + 4096);
    g_block[1] = (float *)(m + 4096 + block);
    memset(m + 4096, 0, 2 * block);
    pid_t pid = fork();
    if (pid < 0) {
        perror("handoff_bw: fork");
        return 1;
    }
    if (pid == 0) _exit(worker(1, sizes, nsizes, target, bind));
    rc = worker(0, sizes, nsizes, target, bind);
    if (rc != 0) atomic_store(&g_ctl->failed, 1);
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
    printf("# errors: %ld\n", g_ctl->errors);
    return rc != 0 || g_ctl->errors != 0;
}
