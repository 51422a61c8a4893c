/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_copy_bw - the copy-bound model of libhvd's host-staged path on one GPU: how long moving a
 * buffer to pinned host memory and back takes with cudaMemcpyAsync, which bounds an allreduce
 * that stages through the host (hvd_bench --device cuda with HVD_GPU_OPERATIONS=host).
 *
 * -d staged (default): a device-to-host copy, then a host-to-device copy of the same size on
 *             one stream (the copies of an unpipelined staged op, back to back);
 * -d duplex:  both copies at once on two streams (what a staged op that overlaps its copies in
 *             chunks could reach at best).
 * Output: bench_common.h's format, algbw = size / time (busbw = algbw). Without a CUDA runtime
 * or device: "# skipped: ..." and exit 77.
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "bench_common.h"
#include "cuda_dl.h"

static char *g_dev_a, *g_dev_b, *g_host_a, *g_host_b;
static cuda_stream_t g_down, g_up;
static int g_duplex;

static double run(size_t bytes, long iters) {
    int duplex = g_duplex;
    long it;
    double t0 = bench_now();
    for (it = 0; it < iters; it++) {
        cuda_dl_check(cuda.memcpy_async(g_host_a, g_dev_a, bytes, kCudaMemcpyDeviceToHost, g_down),
                      "cudaMemcpyAsync (to the host)");
        cuda_dl_check(cuda.memcpy_async(duplex ? g_dev_b : g_dev_a, duplex ? g_host_b : g_host_a,
                                        bytes, kCudaMemcpyHostToDevice, duplex ? g_up : g_down),
                      "cudaMemcpyAsync (to the device)");
    }
    cuda_dl_check(cuda.stream_synchronize(g_down), "cudaStreamSynchronize");
    cuda_dl_check(cuda.stream_synchronize(g_up), "cudaStreamSynchronize");
    return (bench_now() - t0) / (double)iters;
}

/* A byte pattern copied to the host and back to the device (into the other buffer) arrives
 * whole at both. */
static long check(size_t bytes) {
    size_t i;
    long wrong = 0;
    for (i = 0; i < bytes; i++)
        g_host_b[i] = (char)(i * 7 + 3);
    cuda_dl_check(cuda.memcpy_(g_dev_a, g_host_b, bytes, kCudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_dl_check(cuda.memcpy_async(g_host_a, g_dev_a, bytes, kCudaMemcpyDeviceToHost, g_down),
                  "cudaMemcpyAsync (to the host)");
    cuda_dl_check(cuda.memcpy_async(g_dev_b, g_host_a, bytes, kCudaMemcpyHostToDevice, g_down),
                  "cudaMemcpyAsync (to the device)");
    cuda_dl_check(cuda.stream_synchronize(g_down), "cudaStreamSynchronize");
    cuda_dl_check(cuda.memcpy_(g_host_b, g_dev_b, bytes, kCudaMemcpyDeviceToHost), "cudaMemcpy");
    for (i = 0; i < bytes; i++)
        if (g_host_a[i] != (char)(i * 7 + 3) || g_host_b[i] != (char)(i * 7 + 3)) wrong++;
    if (wrong) fprintf(stderr, "# ERROR size %zu: %ld bytes changed on the way\n", bytes, wrong);
    return wrong;
}

static void usage(void) {
    fprintf(stderr,
            "usage: cuda_copy_bw [-d staged|duplex] [-b MIN] [-e MAX] [-f FACTOR]\n"
            "       [-x EXTRA,...|none] [-t SEC] [-w N] [-m MAXITERS] [-C 0|1]\n");
}

int main(int argc, char **argv) {
    size_t minb, maxb, sizes[BENCH_MAX_SIZES], maxbytes;
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S;
    const char *extra = BENCH_DEFAULT_EXTRA;
    int nsizes, si, opt, warmup = 2, do_check = 1;
    long maxit = 100000, errors = 0;
    struct bench_opts o = {&minb,  &maxb,     &factor, &extra, &target, &warmup,
                           &maxit, &do_check, NULL,    NULL,   NULL};
    void *p;
    minb = bench_parse_size(BENCH_DEFAULT_MIN);
    maxb = bench_parse_size(BENCH_DEFAULT_MAX);
    while ((opt = getopt(argc, argv, "d:b:e:f:x:t:w:m:C:h")) != -1) {
        if (opt == 'd' && (strcmp(optarg, "staged") == 0 || strcmp(optarg, "duplex") == 0)) {
            g_duplex = strcmp(optarg, "duplex") == 0;
            continue;
        }
        if (opt == 'd' || !bench_option(opt, optarg, &o)) {
            usage();
            return 2;
        }
    }
    nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0 || maxit < 1) {
        usage();
        return 2;
    }
    cuda_dl_open("cuda_copy_bw", 1);
    maxbytes = sizes[nsizes - 1];
    cuda_dl_check(cuda.set_device(0), "cudaSetDevice");
    cuda_dl_check(cuda.malloc_(&p, maxbytes), "cudaMalloc");
    g_dev_a = p;
    cuda_dl_check(cuda.malloc_(&p, maxbytes), "cudaMalloc");
    g_dev_b = p;
    cuda_dl_check(cuda.malloc_host(&p, maxbytes), "cudaMallocHost");
    g_host_a = p;
    cuda_dl_check(cuda.malloc_host(&p, maxbytes), "cudaMallocHost");
    g_host_b = p;
    cuda_dl_check(cuda.stream_create(&g_down), "cudaStreamCreate");
    cuda_dl_check(cuda.stream_create(&g_up), "cudaStreamCreate");

    printf(
        "# cuda_copy_bw: coll=copy nranks=1 inplace=0 mode=%s (device 0, pinned host "
        "memory; staged: to the host then back, duplex: both at once)\n",
        g_duplex ? "duplex" : "staged");
    printf("%s\n", BENCH_HEADER);
    for (si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        long iters = 1;
        double dt;
        int w;
        if (do_check) errors += check(bytes);
        for (w = 0; w < warmup; w++)
            run(bytes, 1);
        for (;;) { /* calibration: iterations filling BENCH_CALIB_MIN_S */
            dt = run(bytes, iters) * (double)iters;
            if (dt >= BENCH_CALIB_MIN_S || iters >= maxit) break;
            iters = bench_calib_next(iters, dt, maxit);
        }
        iters = bench_iters_for(dt / (double)iters, target, maxit);
        bench_print_line(bytes, bytes, "byte", g_duplex ? "duplex" : "staged", run(bytes, iters),
                         1.0);
    }
    cuda.stream_destroy(g_down);
    cuda.stream_destroy(g_up);
    cuda.free_host(g_host_a);
    cuda.free_host(g_host_b);
    cuda.free_(g_dev_a);
    cuda.free_(g_dev_b);
    printf("# errors: %ld\n", errors);
    return errors ? 1 : 0;
}
