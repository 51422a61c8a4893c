/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nccl_allreduce_perf - raw NCCL allreduce (float32 sum) on the GPUs of one process, the peer of
 * hvd_bench --device cuda on the NCCL path: what NCCL itself does on the same devices, with no
 * library around it (as nccl-tests' all_reduce_perf -g N). One communicator per GPU from
 * ncclCommInitAll, one stream per GPU, each timed iteration one ncclAllReduce per GPU inside a
 * group, the time the host waits for every stream, averaged over the iterations.
 *
 * Output: bench_common.h's format (busbw = algbw * 2(n-1)/n, n the number of GPUs).
 * NCCL: HVD_NCCL_LIBRARY if set, else libnccl.so.2. Without a CUDA runtime, a device or NCCL:
 * "# skipped: ..." and exit 77.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <unistd.h>

#include "bench_common.h"
#include "cuda_dl.h"

#define MAX_GPUS 16

/* nccl.h's values; stable across NCCL 2.x. */
enum { kNcclFloat32 = 7, kNcclSum = 0 };
typedef void *nccl_comm_t;

static struct {
    int (*comm_init_all)(nccl_comm_t *, int, const int *);
    int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm_t, cuda_stream_t);
    int (*group_start)(void);
    int (*group_end)(void);
    int (*comm_destroy)(nccl_comm_t);
    int (*get_version)(int *);
    const char *(*error_string)(int);
} nccl;

static int g_n = 1, g_inplace = 1;
static float *g_dev_in[MAX_GPUS], *g_dev_out[MAX_GPUS], *g_host;
static nccl_comm_t g_comms[MAX_GPUS];
static cuda_stream_t g_streams[MAX_GPUS];

static void nccl_check(int rc, const char *what) {
    if (rc == 0) return;
    fprintf(stderr, "nccl_allreduce_perf: %s: %s\n", what,
            nccl.error_string ? nccl.error_string(rc) : "NCCL error");
    exit(1);
}

static void load_nccl(void) {
    const char *path = getenv("HVD_NCCL_LIBRARY");
    void *h = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    char why[512];
    if (h == NULL) {
        snprintf(why, sizeof why, "no NCCL (%s): %s", path && *path ? path : "libnccl.so.2",
                 dlerror());
        cuda_dl_skip(why);
    }
    *(void **)&nccl.comm_init_all = dlsym(h, "ncclCommInitAll");
    *(void **)&nccl.all_reduce = dlsym(h, "ncclAllReduce");
    *(void **)&nccl.group_start = dlsym(h, "ncclGroupStart");
    *(void **)&nccl.group_end = dlsym(h, "ncclGroupEnd");
    *(void **)&nccl.comm_destroy = dlsym(h, "ncclCommDestroy");
    *(void **)&nccl.get_version = dlsym(h, "ncclGetVersion");
    *(void **)&nccl.error_string = dlsym(h, "ncclGetErrorString");
    if (!nccl.comm_init_all || !nccl.all_reduce || !nccl.group_start || !nccl.group_end ||
        !nccl.comm_destroy || !nccl.get_version || !nccl.error_string) {
        fprintf(stderr, "nccl_allreduce_perf: NCCL lacks a function this program calls\n");
        exit(1);
    }
}

/* One allreduce of count floats on every GPU, as a group; returns once queued. */
static void queue_allreduce(size_t count) {
    int g;
    nccl_check(nccl.group_start(), "ncclGroupStart");
    for (g = 0; g < g_n; g++) {
        float *in = g_dev_in[g], *out = g_inplace ? g_dev_in[g] : g_dev_out[g];
        nccl_check(
            nccl.all_reduce(in, out, count, kNcclFloat32, kNcclSum, g_comms[g], g_streams[g]),
            "ncclAllReduce");
    }
    nccl_check(nccl.group_end(), "ncclGroupEnd");
}

static void wait_all(void) {
    int g;
    for (g = 0; g < g_n; g++) {
        cuda_dl_check(cuda.set_device(g), "cudaSetDevice");
        cuda_dl_check(cuda.stream_synchronize(g_streams[g]), "cudaStreamSynchronize");
    }
}

static double run(size_t count, long iters) {
    long it;
    double t0 = bench_now();
    for (it = 0; it < iters; it++)
        queue_allreduce(count);
    wait_all();
    return (bench_now() - t0) / (double)iters;
}

/* Every GPU's input is bench_val(g, i); one allreduce; every output checked. */
static long check(size_t count, size_t bytes) {
    long wrong = 0;
    int g, r;
    size_t i;
    for (g = 0; g < g_n; g++) {
        for (i = 0; i < count; i++)
            g_host[i] = bench_val(g, i);
        cuda_dl_check(cuda.set_device(g), "cudaSetDevice");
        cuda_dl_check(cuda.memcpy_(g_dev_in[g], g_host, bytes, kCudaMemcpyHostToDevice),
                      "cudaMemcpy (input)");
    }
    queue_allreduce(count);
    wait_all();
    for (g = 0; g < g_n; g++) {
        cuda_dl_check(cuda.set_device(g), "cudaSetDevice");
        cuda_dl_check(cuda.memcpy_(g_host, g_inplace ? g_dev_in[g] : g_dev_out[g], bytes,
                                   kCudaMemcpyDeviceToHost),
                      "cudaMemcpy (output)");
        for (i = 0; i < count; i++) {
            float want = 0;
            for (r = 0; r < g_n; r++)
                want += bench_val(r, i);
            if (g_host[i] != want && !wrong++)
                fprintf(stderr, "# ERROR GPU %d size %zu: element %zu is %g, expected %g\n", g,
                        bytes, i, (double)g_host[i], (double)want);
        }
    }
    return wrong;
}

static void usage(void) {
    fprintf(stderr,
            "usage: nccl_allreduce_perf [-g GPUS] [-b MIN] [-e MAX] [-f FACTOR]\n"
            "       [-x EXTRA,...|none] [-i 0|1] [-t SEC] [-w N] [-m MAXITERS] [-C 0|1]\n");
}

int main(int argc, char **argv) {
    size_t minb, maxb, sizes[BENCH_MAX_SIZES], maxbytes;
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S;
    const char *extra = BENCH_DEFAULT_EXTRA;
    int nsizes, si, opt, g, warmup = 5, do_check = 1, version = 0, devs[MAX_GPUS];
    long maxit = 100000, errors = 0;
    struct bench_opts o = {&minb,  &maxb,     &factor,    &extra, &target, &warmup,
                           &maxit, &do_check, &g_inplace, NULL,   NULL};
    minb = bench_parse_size(BENCH_DEFAULT_MIN);
    maxb = bench_parse_size(BENCH_DEFAULT_MAX);
    while ((opt = getopt(argc, argv, "g:b:e:f:x:t:w:m:C:i:h")) != -1) {
        if (opt == 'g') {
            g_n = atoi(optarg);
            continue;
        }
        if (!bench_option(opt, optarg, &o)) {
            usage();
            return 2;
        }
    }
    if (g_n < 1 || g_n > MAX_GPUS || maxit < 1) {
        usage();
        return 2;
    }
    nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) {
        fprintf(stderr, "nccl_allreduce_perf: bad size range\n");
        return 2;
    }
    cuda_dl_open("nccl_allreduce_perf", g_n);
    load_nccl();
    nccl_check(nccl.get_version(&version), "ncclGetVersion");
    maxbytes = sizes[nsizes - 1] / sizeof(float) * sizeof(float);
    if (maxbytes == 0) maxbytes = sizeof(float);
    for (g = 0; g < g_n; g++) {
        void *p = NULL;
        devs[g] = g;
        cuda_dl_check(cuda.set_device(g), "cudaSetDevice");
        cuda_dl_check(cuda.malloc_(&p, maxbytes), "cudaMalloc");
        g_dev_in[g] = p;
        cuda_dl_check(cuda.malloc_(&p, maxbytes), "cudaMalloc");
        g_dev_out[g] = p;
        cuda_dl_check(cuda.stream_create(&g_streams[g]), "cudaStreamCreate");
    }
    g_host = malloc(maxbytes);
    if (g_host == NULL) {
        fprintf(stderr, "nccl_allreduce_perf: out of host memory\n");
        return 1;
    }
    nccl_check(nccl.comm_init_all(g_comms, g_n, devs), "ncclCommInitAll");

    printf(
        "# nccl_allreduce_perf: coll=allreduce nranks=%d inplace=%d dtype=float32 op=sum "
        "nccl=%d (one process, one GPU per rank)\n",
        g_n, g_inplace, version);
    printf("%s\n", BENCH_HEADER);
    for (si = 0; si < nsizes; si++) {
        size_t count = sizes[si] / sizeof(float), bytes = count * sizeof(float);
        long iters = 1;
        double dt;
        int w;
        if (count == 0) continue;
        if (do_check) errors += check(count, bytes);
        for (w = 0; w < warmup; w++)
            run(count, 1);
        for (;;) { /* calibration: iterations filling BENCH_CALIB_MIN_S */
            dt = run(count, iters) * (double)iters;
            if (dt >= BENCH_CALIB_MIN_S || iters >= maxit) break;
            iters = bench_calib_next(iters, dt, maxit);
        }
        iters = bench_iters_for(dt / (double)iters, target, maxit);
        bench_print_line(bytes, count, "float", "sum", run(count, iters),
                         2.0 * (double)(g_n - 1) / (double)g_n);
    }
    for (g = 0; g < g_n; g++) {
        nccl.comm_destroy(g_comms[g]);
        cuda.set_device(g);
        cuda.stream_destroy(g_streams[g]);
        cuda.free_(g_dev_in[g]);
        cuda.free_(g_dev_out[g]);
    }
    free(g_host);
    printf("# errors: %ld\n", errors);
    return errors ? 1 : 0;
}
