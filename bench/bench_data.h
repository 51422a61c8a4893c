// SPDX-License-Identifier: Apache-2.0
/* Inputs, output sentinels and result checks of one size, per collective. */
#ifndef HVD_BENCH_DATA_H_
#define HVD_BENCH_DATA_H_

#include "bench_job.h"

/* Writes every rank's input pattern and fills caller-owned outputs with the sentinel. */
void bench_data_init(bench_job_t *job, const bench_layout_t *l);

/* Before the timed loop: outputs back to the sentinel (and in-place inputs back to the
 * pattern), so an operation that silently does nothing fails the check after the loop. */
void bench_data_reset(bench_job_t *job, const bench_layout_t *l);

/* Wrong elements of the step that just completed on this rank (its requests not yet
 * released); reports the first one of each tensor on stderr. `when` names the phase. */
long bench_data_check(bench_job_t *job, const bench_layout_t *l, const char *when);

#endif /* HVD_BENCH_DATA_H_ */
