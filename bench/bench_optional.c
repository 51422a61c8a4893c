/* SPDX-License-Identifier: Apache-2.0 */
/* Run-time lookup of the collectives older libhvd builds lack (see bench_optional.h). */
#define _GNU_SOURCE
#include "bench_optional.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *symbol_of(bench_coll_t coll) {
    switch (coll) {
        case BENCH_ALLTOALL:
            return "hvd_alltoall_enqueue";
        case BENCH_REDUCESCATTER:
            return "hvd_reducescatter_enqueue";
        default:
            return NULL;
    }
}

bench_owned_output_fn bench_optional_enqueue(bench_coll_t coll) {
    const char *sym = symbol_of(coll);
    bench_owned_output_fn fn = NULL;
    if (!sym) return NULL;
    /* POSIX's way to turn a dlsym result into a function pointer. */
    void *addr = dlsym(RTLD_DEFAULT, sym);
    memcpy(&fn, &addr, sizeof fn);
    return fn;
}

int bench_coll_available(bench_coll_t coll, int speak) {
    if (!symbol_of(coll) || bench_optional_enqueue(coll)) return 0;
    if (speak)
        fprintf(stderr, "hvd_bench: %s is not supported by this libhvd (%s): it exports no %s\n",
                bench_coll_name(coll), hvd_version_string(), symbol_of(coll));
    return -1;
}
