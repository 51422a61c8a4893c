/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA runtime calls of hvd_bench --device cuda (see bench_device.h). */
#include "bench_device.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kHostToDevice = 1, kDeviceToHost = 2 }; /* cudaMemcpyKind */

static struct {
    int (*get_device_count)(int *);
    int (*set_device)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*synchronize)(void);
    const char *(*error_string)(int);
} cuda;

static void cuda_check(bench_job_t *job, int rc, const char *what) {
    if (rc == 0) return;
    fprintf(stderr, "hvd_bench: rank %d: %s: %s\n", job->rank, what,
            cuda.error_string ? cuda.error_string(rc) : "CUDA error");
    bench_fail(job, what, HVD_ERR_DEVICE);
}

static void load_runtime(bench_job_t *job) {
    static const char *const kNames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof kNames / sizeof kNames[0] && h == NULL; ++i)
        h = dlopen(kNames[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr,
                "hvd_bench: rank %d: --device cuda: no CUDA runtime (libcudart.so.13, .12) on the "
                "library path\n",
                job->rank);
        bench_fail(job, "loading the CUDA runtime", HVD_ERR_UNSUPPORTED);
    }
    *(void **)&cuda.get_device_count = dlsym(h, "cudaGetDeviceCount");
    *(void **)&cuda.set_device = dlsym(h, "cudaSetDevice");
    *(void **)&cuda.malloc_ = dlsym(h, "cudaMalloc");
    *(void **)&cuda.free_ = dlsym(h, "cudaFree");
    *(void **)&cuda.memcpy_ = dlsym(h, "cudaMemcpy");
    *(void **)&cuda.synchronize = dlsym(h, "cudaDeviceSynchronize");
    *(void **)&cuda.error_string = dlsym(h, "cudaGetErrorString");
    if (!cuda.get_device_count || !cuda.set_device || !cuda.malloc_ || !cuda.free_ ||
        !cuda.memcpy_ || !cuda.synchronize)
        bench_fail(job, "resolving the CUDA runtime's functions", HVD_ERR_UNSUPPORTED);
}

void bench_device_open(bench_job_t *job, size_t in_bytes, size_t out_bytes) {
    load_runtime(job);
    int count = 0;
    cuda_check(job, cuda.get_device_count(&count), "cudaGetDeviceCount");
    if (count == 0) bench_fail(job, "--device cuda: no CUDA device", HVD_ERR_UNSUPPORTED);
    int32_t local = 0;
    hvd_local_rank(job->ctx, &local);
    job->device = local % count;
    cuda_check(job, cuda.set_device(job->device), "cudaSetDevice");
    void *p = NULL;
    cuda_check(job, cuda.malloc_(&p, in_bytes ? in_bytes : 1), "cudaMalloc (inputs)");
    job->dev_in = p;
    job->dev_out = job->dev_in;
    if (job->out != job->in) {
        cuda_check(job, cuda.malloc_(&p, out_bytes ? out_bytes : 1), "cudaMalloc (outputs)");
        job->dev_out = p;
    }
    job->dev_in_bytes = in_bytes;
    job->dev_out_bytes = out_bytes;
}

void bench_device_close(bench_job_t *job) {
    if (job->dev_out != job->dev_in) cuda.free_(job->dev_out);
    cuda.free_(job->dev_in);
    free(job->fetch);
}

void *bench_device_ptr(const bench_job_t *job, const char *host) {
    if (host >= job->in && host < job->in + job->dev_in_bytes)
        return job->dev_in + (host - job->in);
    return job->dev_out + (host - job->out);
}

void bench_device_upload(bench_job_t *job) {
    cuda_check(job, cuda.memcpy_(job->dev_in, job->in, job->dev_in_bytes, kHostToDevice),
               "cudaMemcpy (inputs up)");
    if (job->dev_out != job->dev_in)
        cuda_check(job, cuda.memcpy_(job->dev_out, job->out, job->dev_out_bytes, kHostToDevice),
                   "cudaMemcpy (outputs up)");
    // A copy from pageable memory may return before its data reached the device, and the
    // library's streams are not ordered after the legacy default stream: wait for it.
    cuda_check(job, cuda.synchronize(), "cudaDeviceSynchronize (after the upload)");
}

void bench_device_download(bench_job_t *job) {
    cuda_check(job, cuda.memcpy_(job->in, job->dev_in, job->dev_in_bytes, kDeviceToHost),
               "cudaMemcpy (inputs down)");
    if (job->dev_out != job->dev_in)
        cuda_check(job, cuda.memcpy_(job->out, job->dev_out, job->dev_out_bytes, kDeviceToHost),
                   "cudaMemcpy (outputs down)");
}

const char *bench_device_fetch(bench_job_t *job, const void *dev, size_t bytes) {
    if (bytes > job->fetch_bytes) {
        free(job->fetch);
        job->fetch = malloc(bytes);
        if (job->fetch == NULL) bench_fail(job, "allocating a host copy", HVD_ERR_NO_MEMORY);
        job->fetch_bytes = bytes;
    }
    if (bytes > 0)
        cuda_check(job, cuda.memcpy_(job->fetch, dev, bytes, kDeviceToHost), "cudaMemcpy (output)");
    return job->fetch;
}
