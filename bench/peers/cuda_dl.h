/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_dl.h - the CUDA runtime calls of the GPU peers (nccl_allreduce_perf, cuda_copy_bw),
 * loaded with dlopen so that they build where no CUDA toolkit is and, run where no GPU is,
 * say so and exit 77 (skipped) instead of failing to start.
 */
#ifndef CUDA_DL_H
#define CUDA_DL_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_DL_SKIPPED 77

enum { kCudaMemcpyHostToDevice = 1, kCudaMemcpyDeviceToHost = 2 }; /* cudaMemcpyKind */

typedef void *cuda_stream_t; /* cudaStream_t */

struct cuda_dl {
    int (*get_device_count)(int *);
    int (*set_device)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*malloc_host)(void **, size_t);
    int (*free_host)(void *);
    int (*memcpy_)(void *, const void *, size_t, int);
    int (*memcpy_async)(void *, const void *, size_t, int, cuda_stream_t);
    int (*stream_create)(cuda_stream_t *);
    int (*stream_synchronize)(cuda_stream_t);
    int (*stream_destroy)(cuda_stream_t);
    const char *(*error_string)(int);
};

static struct cuda_dl cuda;
static const char *cuda_dl_program = "cuda peer";

/* Prints "# skipped: why" and exits 77. */
static inline void cuda_dl_skip(const char *why) {
    printf("# skipped: %s\n", why);
    fflush(stdout);
    exit(CUDA_DL_SKIPPED);
}

/* Exits 1 with the CUDA error of a failed call. */
static inline void cuda_dl_check(int rc, const char *what) {
    if (rc == 0) return;
    fprintf(stderr, "%s: %s: %s\n", cuda_dl_program, what,
            cuda.error_string ? cuda.error_string(rc) : "CUDA error");
    exit(1);
}

/* Loads the runtime (libcudart.so.13, then .12) and checks that at least `devices` devices
 * are visible; skips (exit 77) where either is missing. */
static inline void cuda_dl_open(const char *program, int devices) {
    static const char *const kNames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    void *h = NULL;
    size_t i;
    int count = 0;
    cuda_dl_program = program;
    for (i = 0; i < sizeof kNames / sizeof kNames[0] && h == NULL; ++i)
        h = dlopen(kNames[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) cuda_dl_skip("no CUDA runtime (libcudart.so.13, .12) on the library path");
    *(void **)&cuda.get_device_count = dlsym(h, "cudaGetDeviceCount");
    *(void **)&cuda.set_device = dlsym(h, "cudaSetDevice");
    *(void **)&cuda.malloc_ = dlsym(h, "cudaMalloc");
    *(void **)&cuda.free_ = dlsym(h, "cudaFree");
    *(void **)&cuda.malloc_host = dlsym(h, "cudaMallocHost");
    *(void **)&cuda.free_host = dlsym(h, "cudaFreeHost");
    *(void **)&cuda.memcpy_ = dlsym(h, "cudaMemcpy");
    *(void **)&cuda.memcpy_async = dlsym(h, "cudaMemcpyAsync");
    *(void **)&cuda.stream_create = dlsym(h, "cudaStreamCreate");
    *(void **)&cuda.stream_synchronize = dlsym(h, "cudaStreamSynchronize");
    *(void **)&cuda.stream_destroy = dlsym(h, "cudaStreamDestroy");
    *(void **)&cuda.error_string = dlsym(h, "cudaGetErrorString");
    if (!cuda.get_device_count || !cuda.set_device || !cuda.malloc_ || !cuda.free_ ||
        !cuda.malloc_host || !cuda.free_host || !cuda.memcpy_ || !cuda.memcpy_async ||
        !cuda.stream_create || !cuda.stream_synchronize || !cuda.stream_destroy ||
        !cuda.error_string) {
        fprintf(stderr, "%s: the CUDA runtime lacks a function this program calls\n", program);
        exit(1);
    }
    if (cuda.get_device_count(&count) != 0 || count < 1) cuda_dl_skip("no CUDA device");
    if (count < devices) {
        fprintf(stderr, "%s: %d CUDA devices asked for, %d visible\n", program, devices, count);
        exit(2);
    }
}

#endif /* CUDA_DL_H */
