// SPDX-License-Identifier: Apache-2.0
#include "remote_binding.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "cpu_binding.h"
#include "numbers.h"
#include "placement.h"

namespace hvdrun {

namespace {

// Exit status of a wrapper that could not bind or start the program (a shell's "cannot run").
constexpr int kCannotRun = 127;

std::string bind_spec(const BindPolicy &policy) {
    return std::string(level_name(policy.bind_to)) +
           (policy.overload_allowed ? ":overload-allowed" : "");
}

bool parse_count(const char *text, int min, int *out) {
    long long v = 0;
    if (!parse_whole(text, min, INT_MAX, &v)) return false;
    *out = static_cast<int>(v);
    return true;
}

}  // namespace

std::vector<std::string> bound_command(const std::string &hvdrun_path, const BindPolicy &policy,
                                       const Placement &p, bool report,
                                       const std::vector<std::string> &command) {
    std::vector<std::string> argv = {hvdrun_path,
                                     kExecBoundFlag,
                                     bind_spec(policy),
                                     level_name(policy.map_by),
                                     std::to_string(p.local_rank),
                                     std::to_string(p.local_size),
                                     std::to_string(p.rank),
                                     report ? "1" : "0",
                                     "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

int exec_bound(int argc, char **argv) {
    const std::string host = this_host_name();
    int rank = -1;
    auto fail = [&](const std::string &what) {
        std::fprintf(stderr, "hvdrun on %s: rank %d: %s\n", host.c_str(), rank, what.c_str());
        return kCannotRun;
    };
    BindPolicy policy;
    int local_rank = 0, local_size = 0, report = 0;
    if (argc > 6 && !parse_count(argv[6], 0, &rank)) rank = -1;  // named in the usage error
    if (argc < 10 || std::strcmp(argv[8], "--") != 0 || rank < 0 ||
        !parse_bind_to(argv[2], &policy) || !parse_map_by(argv[3], &policy) ||
        !parse_count(argv[5], 1, &local_size) || !parse_count(argv[4], 0, &local_rank) ||
        local_rank >= local_size || !parse_count(argv[7], 0, &report))
        return fail(std::string("usage: hvdrun ") + kExecBoundFlag +
                    " BIND MAP LOCAL_RANK LOCAL_SIZE RANK REPORT -- COMMAND... (hvdrun runs "
                    "this on other hosts for --bind-to; was this host's hvdrun another "
                    "version?)");
    hvd::topology::Machine machine;
    std::string err;
    if (!load_local_machine(&machine, &err)) return fail("--bind-to: " + err);
    std::vector<int> locals(static_cast<size_t>(local_size));
    std::iota(locals.begin(), locals.end(), 0);
    std::vector<std::vector<int>> cpus;
    if (!place_local_ranks(machine, policy, locals, &cpus, &err))
        return fail(err + " (ranks numbered by their place on this host)");
    const std::vector<int> &mine = cpus[static_cast<size_t>(local_rank)];
    if (!mine.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c : mine)
            CPU_SET(c, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            return fail(std::string("--bind-to: cannot pin to its CPUs: ") + std::strerror(errno));
    }
    if (report != 0) {
        std::fprintf(stderr, "[%s:%d] MCW rank %d %s\n", host.c_str(), static_cast<int>(getpid()),
                     rank,
                     mine.empty() ? "is not bound (or bound to all available processors)"
                                  : ("bound to " + describe_binding(machine, mine)).c_str());
        std::fflush(stderr);
    }
    execvp(argv[9], argv + 9);
    return fail(std::string("cannot run ") + argv[9] + ": " + std::strerror(errno));
}

std::string own_executable() {
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return "";
    path[n] = '\0';
    return path;
}

}  // namespace hvdrun
