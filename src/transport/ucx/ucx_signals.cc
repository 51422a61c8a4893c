// SPDX-License-Identifier: Apache-2.0
#include "transport/ucx/ucx_signals.h"

#include <dlfcn.h>
#include <ucs/debug/debug.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace hvd::transport {

namespace {

// Whether sig's current handler is a function of libucs.
bool handled_by_ucs(int sig) {
    struct sigaction current;
    if (::sigaction(sig, nullptr, &current) != 0) return false;
    void *fn = (current.sa_flags & SA_SIGINFO) != 0 ? reinterpret_cast<void *>(current.sa_sigaction)
                                                    : reinterpret_cast<void *>(current.sa_handler);
    if (fn == reinterpret_cast<void *>(SIG_DFL) || fn == reinterpret_cast<void *>(SIG_IGN))
        return false;
    Dl_info info;
    if (::dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return false;
    const char *base = std::strrchr(info.dli_fname, '/');
    return std::strncmp(base != nullptr ? base + 1 : info.dli_fname, "libucs.", 7) == 0;
}

// At load, after libucs's own initialisation (a library's dependencies initialise first).
__attribute__((constructor)) void release_at_load() {
    (void)release_ucx_error_signals();
}

}  // namespace

int release_ucx_error_signals() {
    if (std::getenv("UCX_HANDLE_ERRORS") != nullptr || std::getenv("UCX_ERROR_SIGNALS") != nullptr)
        return 0;
    int restored = 0;
    for (int sig : {SIGILL, SIGSEGV, SIGBUS, SIGFPE}) {
        if (!handled_by_ucs(sig)) continue;
        ucs_debug_disable_signal(sig);  // puts back the handler libucs found
        ++restored;
    }
    return restored;
}

}  // namespace hvd::transport
