// SPDX-License-Identifier: Apache-2.0
// --bind-to for ranks on other hosts. Their CPUs are chosen on their own host, from its own
// topology, by hvdrun itself run there in front of the program (`hvdrun --exec-bound ...`),
// as mpirun's daemons bind the ranks of their hosts: it pins itself as place_local_ranks
// places that local rank, then execs the program, which keeps the pinning. hvdrun must
// therefore be installed at the same path on every host, as libhvd must be.
#pragma once

#include <string>
#include <vector>

#include "binding_policy.h"
#include "hosts.h"

namespace hvdrun {

// The first argument of the wrapper mode.
constexpr const char *kExecBoundFlag = "--exec-bound";

// What a remote rank runs instead of `command`: hvdrun_path --exec-bound BIND MAP LOCAL_RANK
// LOCAL_SIZE RANK REPORT -- command... (REPORT: 1 to write mpirun's --report-bindings line).
std::vector<std::string> bound_command(const std::string &hvdrun_path, const BindPolicy &policy,
                                       const Placement &p, bool report,
                                       const std::vector<std::string> &command);

// The wrapper mode (argv[1] is kExecBoundFlag): pins this process to the CPUs of its local
// rank on this host's topology, writes the report line to stderr when asked, then execs the
// command. Returns only on failure, with the exit status, after writing the problem (naming
// this host and the rank) to stderr.
int exec_bound(int argc, char **argv);

// This executable's absolute path (/proc/self/exe), for the wrapper on other hosts; "" if
// unknown.
std::string own_executable();

}  // namespace hvdrun
