/* SPDX-License-Identifier: Apache-2.0 */
/* signals_after_load LIBHVD kept|ucx: installs handlers of its own for SIGILL, SIGSEGV, SIGBUS
 * and SIGFPE, as a JVM or Julia does before it loads a native library, then loads libhvd with
 * dlopen and runs a one-rank hvd_init / hvd_finalize (HVD_RANK, HVD_SIZE, HVD_JOB_ID from the
 * environment). "kept": passes when every handler is still its own afterwards. "ucx": the
 * control, run where the environment asks UCX for its error handling (UCX_ERROR_SIGNALS):
 * passes when libucs's handler took each signal over, so that the check is seen to detect a
 * takeover. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "hvd/hvd.h"

static const int kSignals[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE};
enum { kCount = sizeof kSignals / sizeof kSignals[0] };

static void own_handler(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)info;
    (void)context;
}

/* The file of the function that handles sig now ("this program", or the library's path). */
static const char *handler_file(int sig) {
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) return "(sigaction failed)";
    void *fn =
        (current.sa_flags & SA_SIGINFO) ? (void *)current.sa_sigaction : (void *)current.sa_handler;
    if (fn == (void *)own_handler) return "this program";
    Dl_info info;
    if (dladdr(fn, &info) == 0 || info.dli_fname == NULL) return "(unknown)";
    return info.dli_fname;
}

/* 0 when every signal is handled as `expect` says; else 1, naming the first that is not. */
static int check(const char *expect, const char *when) {
    for (int i = 0; i < kCount; ++i) {
        const char *file = handler_file(kSignals[i]);
        int ok = strcmp(expect, "kept") == 0 ? strcmp(file, "this program") == 0
                                             : strstr(file, "libucs.") != NULL;
        if (!ok) {
            printf("FAIL %s: signal %d (%s) is handled by %s\n", when, kSignals[i],
                   strsignal(kSignals[i]), file);
            return 1;
        }
    }
    printf("%s: every signal handled as expected (%s)\n", when, expect);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "kept") != 0 && strcmp(argv[2], "ucx") != 0)) {
        fprintf(stderr, "usage: signals_after_load LIBHVD kept|ucx\n");
        return 64;
    }
    struct sigaction own;
    memset(&own, 0, sizeof own);
    own.sa_sigaction = own_handler;
    own.sa_flags = SA_SIGINFO;
    sigemptyset(&own.sa_mask);
    for (int i = 0; i < kCount; ++i)
        if (sigaction(kSignals[i], &own, NULL) != 0) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("FAIL: dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    if (check(argv[2], "after dlopen") != 0) return 1;
    hvd_status_t (*init)(uint32_t, uint32_t, const hvd_init_params_t *, hvd_context_h *) =
        (hvd_status_t(*)(uint32_t, uint32_t, const hvd_init_params_t *, hvd_context_h *))dlsym(
            lib, "hvd_init_versioned");
    hvd_status_t (*finalize)(hvd_context_h) =
        (hvd_status_t(*)(hvd_context_h))dlsym(lib, "hvd_finalize");
    if (init == NULL || finalize == NULL) {
        printf("FAIL: hvd_init_versioned or hvd_finalize missing\n");
        return 1;
    }
    hvd_context_h ctx = NULL;
    hvd_status_t st = init(HVD_ABI_VERSION, HVD_VERSION_CODE, NULL, &ctx);
    if (st != HVD_OK) {
        printf("FAIL: hvd_init: status %d\n", (int)st);
        return 1;
    }
    int failed = check(argv[2], "after hvd_init");
    finalize(ctx);
    return failed;
}
