// SPDX-License-Identifier: Apache-2.0
/* --device cuda: the step's tensors live in CUDA memory. hvd_bench keeps its host buffers
 * (job->in, job->out) for filling and checking, and mirrors them on the device: data is copied
 * up before a measured phase and down before a check, never inside a timed step. The CUDA
 * runtime (libcudart.so.13, .12, or libcudart.so) is loaded at run time, so hvd_bench needs no
 * CUDA to build or to run on CPU tensors. */
#ifndef HVD_BENCH_DEVICE_H_
#define HVD_BENCH_DEVICE_H_

#include <stddef.h>

#include "bench_job.h"

/* Loads the CUDA runtime, picks device (local rank mod count) and allocates the device
 * mirrors of job->in / job->out (bytes each). Fails the job with a message on any error. */
void bench_device_open(bench_job_t *job, size_t in_bytes, size_t out_bytes);
void bench_device_close(bench_job_t *job);

/* The device address of a host buffer address inside job->in or job->out. */
void *bench_device_ptr(const bench_job_t *job, const char *host);

/* Copies the host buffers up to the device / the device mirrors down to the host. */
void bench_device_upload(bench_job_t *job);
void bench_device_download(bench_job_t *job);

/* Copies `bytes` of device memory at dev into a host scratch buffer of the job; returns it. */
const char *bench_device_fetch(bench_job_t *job, const void *dev, size_t bytes);

#endif
