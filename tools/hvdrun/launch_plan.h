// SPDX-License-Identifier: Apache-2.0
// Turns the rank placement into the exact process each rank needs: the program itself for a
// rank on this machine, or ssh for a rank on another host.
#pragma once

#include <string>
#include <vector>

#include "hosts.h"
#include "rank_env.h"
#include "remote_command.h"

namespace hvdrun {

struct RankLaunch {
    int rank = 0;
    std::string host;
    bool remote = false;
    std::vector<std::string> argv;  // what to exec locally: the program, or ssh
    std::vector<std::string> envp;  // its complete environment
    std::string stdin_data;         // for ssh: the job secret, kept off the command line
    std::vector<int> cpus;          // --bind-to: the CPUs a local rank is pinned to; empty: none
    std::vector<EnvVar> vars;       // --elastic-controller: the worker's variables (no argv)
};

struct LaunchContext {
    std::string this_host;  // gethostname()
    std::string cwd;        // remote ranks cd here first
    SshOptions ssh;
    std::vector<EnvVar> exports;  // resolved -x variables
    JobIdentity job;
    int rdv_reservation = -1;  // reserve_rendezvous_port's socket (kept until exit), or -1
};

// Local ranks inherit hvdrun's whole environment plus the rank variables and exports; remote
// ranks get only the rank variables and exports, on the ssh command line, except HVD_SECRET,
// which travels on ssh's stdin (ssh itself runs with hvdrun's environment, for its agent and
// configuration).
std::vector<RankLaunch> plan_launch(const std::vector<Placement> &ranks,
                                    const std::vector<std::string> &command,
                                    const LaunchContext &ctx);

// One process with these variables (plus the exports) on `host`, planned as plan_launch plans
// a rank's; `id` becomes the launch's rank (a worker id in elastic mode).
RankLaunch plan_process(int id, const std::string &host, std::vector<EnvVar> vars,
                        const std::vector<std::string> &command, const LaunchContext &ctx);

}  // namespace hvdrun
