/* SPDX-License-Identifier: Apache-2.0 */
/* CPU binding of hvd_bench ranks (see bench_bind.h). */
#define _GNU_SOURCE
#include "bench_bind.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* The local rank as hvdrun, Open MPI, Slurm, torchrun and MPICH name it. */
static int local_rank_from_env(void) {
    static const char *const kVars[] = {"HVD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "SLURM_LOCALID", "LOCAL_RANK", "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof kVars / sizeof kVars[0]; ++i) {
        const char *v = getenv(kVars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

int bench_bind_to_local_cpu(void) {
    int local = local_rank_from_env();
    if (local < 0) {
        fprintf(stderr, "hvd_bench: --bind: no local rank in the environment; not binding\n");
        return -1;
    }
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        perror("hvd_bench: --bind: sched_getaffinity");
        return -1;
    }
    int n = CPU_COUNT(&allowed), want = local % (n > 0 ? n : 1), seen = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed) || seen++ != want) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) return cpu;
        perror("hvd_bench: --bind: sched_setaffinity");
        return -1;
    }
    return -1;
}
