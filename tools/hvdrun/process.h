// SPDX-License-Identifier: Apache-2.0
// Starting one rank's process: its own process group, stdin from /dev/null, stdout and
// stderr into pipes that hvdrun reads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "rank_env.h"

namespace hvdrun {

struct SpawnedProcess {
    pid_t pid = -1;      // also the process group id
    int out_fd = -1;     // read end of the child's stdout (non-blocking, close-on-exec)
    int err_fd = -1;     // read end of the child's stderr
    int in_fd = -1;      // with stdin data: the write end of its stdin, left open (the child
                         // sees EOF once the caller closes it or exits); else -1
    int exec_errno = 0;  // nonzero: exec failed (the child then exits with 127)
};

// Starts argv[0] (searched in PATH when it has no '/') with exactly the environment `envp`
// ("NAME=VALUE" strings), in its own process group. Its stdin is /dev/null, or, when
// `stdin_data` is not empty, a pipe holding stdin_data, open until the caller closes in_fd
// (stdin_data must fit a pipe buffer, 64 KiB, and SIGPIPE must be ignored). Returns once the child
// has exec'ed or failed to (waits at most 10 s for that). A non-empty `cpus` pins the child to
// those CPUs before it exec's (when the kernel refuses, the child says so on its stderr and runs
// unpinned).
// Throws std::runtime_error when a pipe or fork() fails.
SpawnedProcess spawn_process(const std::vector<std::string> &argv,
                             const std::vector<std::string> &envp, const std::string &stdin_data,
                             const std::vector<int> &cpus = {});

// This process's environment with `overrides` replacing or adding variables.
std::vector<std::string> merged_environment(const std::vector<EnvVar> &overrides);

}  // namespace hvdrun
