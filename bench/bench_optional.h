// SPDX-License-Identifier: Apache-2.0
/* Collectives that only newer libhvd builds export (alltoall, reducescatter). They are looked
 * up in the loaded library at run time, so one hvd_bench binary works with a libhvd that has
 * them and fails with a clear message on one that does not. */
#ifndef HVD_BENCH_OPTIONAL_H_
#define HVD_BENCH_OPTIONAL_H_

#include <hvd/hvd.h>

#include "bench_options.h"

/* The shape shared by hvd_alltoall_enqueue and hvd_reducescatter_enqueue: one input, a
 * library-owned output. */
typedef hvd_status_t (*bench_owned_output_fn)(hvd_context_h ctx, const hvd_tensor_t *in,
                                              const hvd_op_params_t *params, hvd_request_h *req_p);

/* The enqueue function of an optional collective; NULL when the loaded libhvd lacks it (and
 * for the collectives every libhvd has). */
bench_owned_output_fn bench_optional_enqueue(bench_coll_t coll);

/* 0 when coll can run with the loaded libhvd, else -1 after saying why on stderr (when
 * speak). */
int bench_coll_available(bench_coll_t coll, int speak);

#endif /* HVD_BENCH_OPTIONAL_H_ */
