// SPDX-License-Identifier: Apache-2.0
#include "launch_plan.h"

#include "process.h"

namespace hvdrun {

namespace {

// Moves HVD_SECRET (the last one, if -x gave another) out of `vars` into stdin data.
std::string take_secret(std::vector<EnvVar> *vars) {
    std::string secret;
    std::vector<EnvVar> rest;
    for (EnvVar &var : *vars) {
        if (var.first == "HVD_SECRET") {
            secret = var.second;
        } else {
            rest.push_back(std::move(var));
        }
    }
    *vars = std::move(rest);
    return secret + "\n";
}

}  // namespace

RankLaunch plan_process(int id, const std::string &host, std::vector<EnvVar> vars,
                        const std::vector<std::string> &command, const LaunchContext &ctx) {
    vars.insert(vars.end(), ctx.exports.begin(), ctx.exports.end());  // -x wins
    RankLaunch launch;
    launch.rank = id;
    launch.host = host;
    launch.remote = !is_local_host(host, ctx.this_host);
    if (launch.remote) {
        launch.stdin_data = take_secret(&vars);
        launch.argv = ssh_argv(host, ctx.ssh, ctx.cwd, vars, command);
        launch.envp = merged_environment({});
    } else {
        launch.argv = command;
        launch.envp = merged_environment(vars);
    }
    return launch;
}

std::vector<RankLaunch> plan_launch(const std::vector<Placement> &ranks,
                                    const std::vector<std::string> &command,
                                    const LaunchContext &ctx) {
    std::vector<RankLaunch> plan;
    int size = static_cast<int>(ranks.size());
    for (const Placement &p : ranks)
        plan.push_back(
            plan_process(p.rank, p.host, rank_variables(p, size, ctx.job), command, ctx));
    return plan;
}

}  // namespace hvdrun
