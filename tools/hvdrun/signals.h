// SPDX-License-Identifier: Apache-2.0
// hvdrun's signal handling: handlers only write the signal number into a pipe that the
// supervision loop polls (the self-pipe pattern), so all real work happens in the loop.
#pragma once

#include <signal.h>

namespace hvdrun {

// The signals hvdrun catches: requests to stop the job, and SIGCHLD (a rank changed state).
// Ranks live in their own process groups, so a terminal's Ctrl-C or Ctrl-\ reaches only
// hvdrun, which forwards it as SIGTERM.
constexpr int kCaughtSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};

// Installs a handler for each of kCaughtSignals, and ignores SIGPIPE. Returns the pipe's
// non-blocking read end. Throws std::runtime_error when the pipe cannot be created.
int install_signal_pipe();

// Reads every pending signal number from the pipe. Returns the last stop request (any caught
// signal but SIGCHLD), or 0 when only SIGCHLD (or nothing) arrived.
int drain_signal_pipe(int fd);

}  // namespace hvdrun
