// SPDX-License-Identifier: Apache-2.0
/* --bind: pin this process to one CPU before hvd_init, as Open MPI does by default for up to
 * two ranks (--bind-to core) and bench/peers/launch_local.sh does with LAUNCH_BIND=1. The
 * pin must come before hvd_init so the engine thread it starts inherits it. */
#ifndef HVD_BENCH_BIND_H_
#define HVD_BENCH_BIND_H_

/* Pins the calling process to the (local rank mod n)-th CPU of its current affinity mask,
 * the local rank read from the launcher's environment. Returns the CPU, or -1 after saying
 * why on stderr (no local rank in the environment, sched_setaffinity failed). */
int bench_bind_to_local_cpu(void);

#endif /* HVD_BENCH_BIND_H_ */
