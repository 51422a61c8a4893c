// SPDX-License-Identifier: Apache-2.0
// hvdrun: starts the ranks of a libhvd job on this machine and over ssh, relays their output
// with rank prefixes, and propagates the first failure. See usage_text() in options.cc.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_binding.h"
#include "hosts.h"
#include "launch_plan.h"
#include "options.h"
#include "rank_env.h"
#include "signals.h"
#include "supervisor.h"

#ifndef HVD_VERSION_STRING_DEF
#error "HVD_VERSION_STRING_DEF must be defined by the build (tools/hvdrun/CMakeLists.txt)"
#endif

namespace hvdrun {
namespace {

constexpr int kUsageError = 2;

// The hosts the ranks may use: -H, --hostfile, or this machine with one slot per rank.
bool load_hosts(const Options &opts, std::vector<HostSlots> *hosts, std::string *err) {
    if (!opts.hosts.empty()) return parse_host_list(opts.hosts, hosts, err);
    if (!opts.hostfile.empty()) return read_hostfile(opts.hostfile, hosts, err);
    *hosts = {HostSlots{"localhost", opts.num_proc}};
    return true;
}

std::string current_dir() {
    char buf[PATH_MAX];
    if (getcwd(buf, sizeof(buf)) == nullptr) {
        throw std::runtime_error(std::string("getcwd: ") + std::strerror(errno));
    }
    return buf;
}

LaunchContext make_context(const Options &opts, const std::vector<Placement> &ranks) {
    LaunchContext ctx;
    ctx.this_host = this_host_name();
    ctx.cwd = current_dir();
    ctx.ssh.port = opts.ssh_port;
    ctx.ssh.connect_timeout = opts.start_timeout;
    std::vector<std::string> unset;
    ctx.exports = resolve_exports(opts.exports, std::getenv, &unset);
    for (const std::string &name : unset) {
        std::fprintf(stderr, "hvdrun: warning: -x %s: not set in this environment, skipped\n",
                     name.c_str());
    }
    ctx.job.rdv_addr = choose_rendezvous_addr(opts.rendezvous_addr, ranks, ctx.this_host);
    // For a local rank 0 the port stays reserved while the job runs: another job's hvdrun
    // cannot pick it while rank 0 starts (e.g. imports a framework) or between its sessions.
    if (is_local_host(ranks.at(0).host, ctx.this_host)) {
        ReservedPort reserved = reserve_rendezvous_port(ctx.job.rdv_addr);
        ctx.job.rdv_port = reserved.port;
        ctx.rdv_reservation = reserved.fd;
    }
    if (ctx.rdv_reservation < 0) ctx.job.rdv_port = pick_free_port(ctx.job.rdv_addr);
    ctx.job.secret = random_hex(32);
    ctx.job.job_id = random_hex(8);
    return ctx;
}

std::string join(const std::vector<std::string> &words) {
    std::string line;
    for (const std::string &w : words) {
        line += (line.empty() ? "" : " ") + shell_quote(w);
    }
    return line;
}

void print_plan(const std::vector<Placement> &ranks, const std::vector<RankLaunch> &plan,
                const LaunchContext &ctx) {
    std::fprintf(stderr, "hvdrun: rendezvous %s:%d, job %s\n", ctx.job.rdv_addr.c_str(),
                 ctx.job.rdv_port, ctx.job.job_id.c_str());
    for (size_t i = 0; i < ranks.size(); ++i) {
        const Placement &p = ranks[i];
        std::string cpu = plan[i].cpu >= 0 ? ", cpu " + std::to_string(plan[i].cpu) : "";
        std::fprintf(stderr, "hvdrun: rank %d on %s (local %d/%d, cross %d/%d%s)%s%s\n", p.rank,
                     p.host.c_str(), p.local_rank, p.local_size, p.cross_rank, p.cross_size,
                     cpu.c_str(), plan[i].remote ? ": " : "",
                     plan[i].remote ? join(plan[i].argv).c_str() : "");
    }
}

// Parses, places and plans; returns an exit code, or -1 to go on and launch `plan`.
int prepare(int argc, char **argv, Options *opts, std::vector<RankLaunch> *plan) {
    std::string err;
    switch (parse_options(std::vector<std::string>(argv + 1, argv + argc), opts, &err)) {
        case ParseOutcome::kHelp:
            std::fputs(usage_text(), stdout);
            return 0;
        case ParseOutcome::kVersion:
            std::printf("hvdrun (libhvd) %s\n", HVD_VERSION_STRING_DEF);
            return 0;
        case ParseOutcome::kError:
            std::fprintf(stderr, "hvdrun: %s\n", err.c_str());
            return kUsageError;
        case ParseOutcome::kRun:
            break;
    }
    std::vector<HostSlots> hosts;
    std::vector<Placement> ranks;
    if (!apply_grace_env(std::getenv("HVD_RUN_GRACE_SECONDS"), opts, &err) ||
        !apply_bind_env(std::getenv("HVD_RUN_BIND_TO"), opts, &err) ||
        !load_hosts(*opts, &hosts, &err) || !place_ranks(hosts, opts->num_proc, &ranks, &err)) {
        std::fprintf(stderr, "hvdrun: %s\n", err.c_str());
        return kUsageError;
    }
    LaunchContext ctx = make_context(*opts, ranks);
    *plan = plan_launch(ranks, opts->command, ctx);
    if (opts->bind_core && !assign_cpus(ranks, allowed_cpus(), plan, &err)) {
        std::fprintf(stderr, "hvdrun: %s\n", err.c_str());
        return kUsageError;
    }
    if (opts->verbose) print_plan(ranks, *plan, ctx);
    return -1;
}

int run(int argc, char **argv) {
    Options opts;
    std::vector<RankLaunch> plan;
    int early = prepare(argc, argv, &opts, &plan);
    if (early >= 0) return early;
    SupervisorConfig config;
    config.grace_seconds = opts.grace_seconds;
    config.prefix_output = !opts.no_prefix;
    config.verbose = opts.verbose;
    config.signal_fd = install_signal_pipe();
    Supervisor supervisor(config);
    supervisor.start(plan);
    return supervisor.wait();
}

}  // namespace
}  // namespace hvdrun

int main(int argc, char **argv) {
    try {
        return hvdrun::run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "hvdrun: %s\n", e.what());
        return 1;
    }
}
