// SPDX-License-Identifier: Apache-2.0
// UCX's base library (libucs) takes SIGILL, SIGSEGV, SIGBUS and SIGFPE over as it is loaded,
// to print a backtrace and end the process (UCX_HANDLE_ERRORS, UCX_ERROR_SIGNALS). In a
// process that handles those signals itself, as the JVM (implicit null checks, safepoint
// polls) and Julia (GC safepoints) do, that turns their ordinary faults into crashes. libhvd
// hands the signals back when it is loaded, unless the user asked UCX for its handling.
#pragma once

namespace hvd::transport {

// Restores, for each of those signals whose handler is libucs's, the handler the process had
// before libucs replaced it; nothing when UCX_HANDLE_ERRORS or UCX_ERROR_SIGNALS is set in
// the environment (the user's choice). Returns how many it restored. Runs once from the
// library's constructor; callable again (then restores none). Not thread-safe against other
// threads changing those signals' handlers at the same time.
int release_ucx_error_signals();

}  // namespace hvd::transport
