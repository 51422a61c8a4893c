// SPDX-License-Identifier: Apache-2.0
// hvdrun: starts the ranks of a libhvd job on this machine and over ssh, relays their output
// with rank prefixes, and propagates the first failure. See usage_text() in usage.cc.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "check_build.h"
#include "config_file.h"
#include "controlled_job.h"
#include "cpu_binding.h"
#include "elastic_driver.h"
#include "host_discovery.h"
#include "hosts.h"
#include "launch_plan.h"
#include "network_interfaces.h"
#include "numbers.h"
#include "options.h"
#include "rank_env.h"
#include "remote_binding.h"
#include "signals.h"
#include "supervisor.h"

#ifndef HVD_VERSION_STRING_DEF
#error "HVD_VERSION_STRING_DEF must be defined by the build (tools/hvdrun/CMakeLists.txt)"
#endif

namespace hvdrun {
namespace {

constexpr int kUsageError = 2;

// The hosts the ranks may use: -H, --hostfile, the discovery script's first answer with -np
// slots, or this machine with one slot per rank.
bool load_hosts(const Options &opts, std::vector<HostSlots> *hosts, std::string *err) {
    const int slots = opts.slots > 0 ? opts.slots : 1;
    if (!opts.discovery_script.empty()) {
        HostDiscovery discovery(opts.discovery_script, 1.0, slots);
        if (discovery.wait_for_slots(opts.num_proc, opts.elastic_timeout, hosts, err)) return true;
        *err = "--host-discovery-script: " + *err;
        return false;
    }
    if (!opts.hosts.empty()) return parse_host_list(opts.hosts, hosts, err, slots);
    if (!opts.hostfile.empty()) return read_hostfile(opts.hostfile, hosts, err, slots);
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

// The settings every rank gets, a later one winning: the config file's, the tuning flags',
// UCX_NET_DEVICES for --network-interfaces, HOROVOD_ELASTIC_RESET_LIMIT for --reset-limit,
// then the -x exports.
bool collect_settings(const Options &opts, std::vector<EnvVar> *settings, std::string *err) {
    std::vector<std::string> warnings;
    if (!opts.config_file.empty() &&
        !read_config_file(opts.config_file, settings, &warnings, err)) {
        return false;
    }
    for (const std::string &w : warnings)
        std::fprintf(stderr, "hvdrun: warning: %s\n", w.c_str());
    settings->insert(settings->end(), opts.settings.begin(), opts.settings.end());
    if (!opts.network_interfaces.empty()) {
        std::string list;
        for (const std::string &name : opts.network_interfaces)
            list += (list.empty() ? "" : ",") + name;
        settings->emplace_back("UCX_NET_DEVICES", list);
    }
    if (opts.reset_limit >= 0)
        settings->emplace_back("HOROVOD_ELASTIC_RESET_LIMIT", std::to_string(opts.reset_limit));
    std::vector<std::string> unset;
    std::vector<EnvVar> exports = resolve_exports(opts.exports, std::getenv, &unset);
    for (const std::string &name : unset) {
        std::fprintf(stderr, "hvdrun: warning: -x %s: not set in this environment, skipped\n",
                     name.c_str());
    }
    settings->insert(settings->end(), exports.begin(), exports.end());
    return true;
}

// Checks what --network-interfaces and --ssh-identity-file name on this machine; with
// interfaces, a rank 0 here is reached at its first interface's address (unless given).
bool check_host_arguments(const Options &opts, const std::vector<Placement> &ranks,
                          const std::string &this_host, std::string *rdv_addr, std::string *err) {
    bool any_local = false, any_remote = false;
    for (const Placement &p : ranks) {
        (is_local_host(p.host, this_host) ? any_local : any_remote) = true;
    }
    if (!opts.ssh_identity_file.empty() && access(opts.ssh_identity_file.c_str(), R_OK) != 0) {
        *err = "--ssh-identity-file " + opts.ssh_identity_file + ": " + std::strerror(errno);
        return false;
    }
    *rdv_addr = opts.rendezvous_addr;
    if (opts.network_interfaces.empty()) return true;
    std::string missing = any_local ? missing_local_interface(opts.network_interfaces) : "";
    if (!missing.empty()) {
        *err = "host " + this_host + " has no network interface " + missing +
               " (--network-interfaces)";
        return false;
    }
    if (rdv_addr->empty() && any_remote && is_local_host(ranks.at(0).host, this_host)) {
        for (const std::string &name : opts.network_interfaces) {
            if (rdv_addr->empty()) *rdv_addr = interface_ipv4_address(name);
        }
    }
    return true;
}

bool any_local(const std::vector<RankLaunch> &plan) {
    for (const RankLaunch &launch : plan)
        if (!launch.remote) return true;
    return false;
}

// Why --bind-to cannot start ranks on other hosts, or elastic workers, through this hvdrun:
// its own path (own_executable()) is unknown.
constexpr const char *kNoOwnPath =
    "--bind-to: cannot find this hvdrun's path (/proc/self/exe) to start ranks through it";

// --bind-to: ranks on other hosts run the program through this hvdrun (at `self`) with
// --exec-bound there (remote_binding.h), which pins them on that host's own topology.
bool bind_remote_ranks(const Options &opts, const std::string &self,
                       const std::vector<Placement> &ranks, const LaunchContext &ctx,
                       std::vector<RankLaunch> *plan, std::string *err) {
    const int size = static_cast<int>(ranks.size());
    for (size_t i = 0; i < ranks.size() && i < plan->size(); ++i) {
        if (!(*plan)[i].remote) continue;
        if (self.empty()) {
            *err = kNoOwnPath;
            return false;
        }
        const Placement &p = ranks[i];
        (*plan)[i] = plan_process(
            p.rank, p.host, rank_variables(p, size, ctx.job),
            bound_command(self, opts.binding, p, opts.report_bindings, opts.command), ctx);
    }
    return true;
}

// HVD_PEER_TIMEOUT as the ranks get it (the last in `settings`, else this environment's),
// for ssh's server-alive check; its default where unset or not a number in 0..3600.
int peer_timeout(const std::vector<EnvVar> &settings) {
    constexpr int kDefault = 30;  // as libhvd's
    const char *text = std::getenv("HVD_PEER_TIMEOUT");
    std::string value = text != nullptr ? text : "";
    for (const EnvVar &v : settings)
        if (v.first == "HVD_PEER_TIMEOUT") value = v.second;
    long long n = 0;
    return parse_whole(value, 0, 3600, &n) ? static_cast<int>(n) : kDefault;
}

LaunchContext make_context(const Options &opts, const std::vector<Placement> &ranks,
                           const std::string &this_host, const std::string &rdv_addr,
                           std::vector<EnvVar> settings) {
    LaunchContext ctx;
    ctx.this_host = this_host;
    ctx.cwd = current_dir();
    ctx.ssh.port = opts.ssh_port;
    ctx.ssh.connect_timeout = opts.start_timeout;
    ctx.ssh.alive_timeout = peer_timeout(settings);
    ctx.ssh.identity_file = opts.ssh_identity_file;
    ctx.ssh.interfaces = opts.network_interfaces;
    ctx.exports = std::move(settings);
    ctx.job.rdv_addr = choose_rendezvous_addr(rdv_addr, ranks, ctx.this_host);
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
        std::string cpu =
            plan[i].cpus.empty() ? "" : ", cpus " + hvd::topology::cpu_list_text(plan[i].cpus);
        std::fprintf(stderr, "hvdrun: rank %d on %s (local %d/%d, cross %d/%d%s)%s%s\n", p.rank,
                     p.host.c_str(), p.local_rank, p.local_size, p.cross_rank, p.cross_size,
                     cpu.c_str(), plan[i].remote ? ": " : "",
                     plan[i].remote ? join(plan[i].argv).c_str() : "");
    }
}

// What prepare() hands to the launch: the ranks of a fixed job, or (elastic) the hosts and
// the job's context.
struct Prepared {
    std::vector<RankLaunch> plan;
    std::vector<HostSlots> hosts;
    LaunchContext ctx;
    std::string self;  // with --bind-to: this hvdrun's path, for ranks started through it
};

// Parses, places and plans; returns an exit code, or -1 to go on and launch.
int prepare(int argc, char **argv, Options *opts, Prepared *out) {
    std::vector<RankLaunch> *plan = &out->plan;
    std::string err;
    switch (parse_options(std::vector<std::string>(argv + 1, argv + argc), opts, &err)) {
        case ParseOutcome::kHelp:
            std::fputs(usage_text().c_str(), stdout);
            return 0;
        case ParseOutcome::kVersion:
            std::printf("hvdrun (libhvd) %s\n", HVD_VERSION_STRING_DEF);
            return 0;
        case ParseOutcome::kCheckBuild: {
            std::string report;
            bool found = check_build_report(argv[0], &report);
            std::fputs(report.c_str(), found ? stdout : stderr);
            return found ? 0 : 1;
        }
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
    std::vector<EnvVar> settings;
    std::string rdv_addr;
    const std::string this_host = this_host_name();
    if (!collect_settings(*opts, &settings, &err) ||
        !check_host_arguments(*opts, ranks, this_host, &rdv_addr, &err)) {
        std::fprintf(stderr, "hvdrun: %s\n", err.c_str());
        return kUsageError;
    }
    LaunchContext ctx = make_context(*opts, ranks, this_host, rdv_addr, std::move(settings));
    if (opts->binding.bind_to != Level::kNone) out->self = own_executable();
    if (opts->elastic) {
        if (opts->binding.bind_to != Level::kNone && opts->elastic_controller)
            std::fprintf(stderr,
                         "hvdrun: warning: --bind-to %s is not applied under "
                         "--elastic-controller: the controller starts the workers\n",
                         level_name(opts->binding.bind_to));
        if (opts->binding.bind_to != Level::kNone && out->self.empty()) {
            std::fprintf(stderr, "hvdrun: %s\n", kNoOwnPath);
            return kUsageError;
        }
        // Each round's rendezvous port is picked when the round forms.
        if (ctx.rdv_reservation >= 0) close(ctx.rdv_reservation);
        ctx.rdv_reservation = -1;
        out->hosts = hosts;
        out->ctx = std::move(ctx);
        return -1;
    }
    *plan = plan_launch(ranks, opts->command, ctx);
    hvd::topology::Machine machine;
    if (opts->binding.bind_to != Level::kNone &&
        ((any_local(*plan) && !load_local_machine(&machine, &err)) ||
         !assign_cpus(machine, opts->binding, ranks, plan, &err) ||
         !bind_remote_ranks(*opts, out->self, ranks, ctx, plan, &err))) {
        std::fprintf(stderr, "hvdrun: %s\n", err.c_str());
        return kUsageError;
    }
    if (opts->verbose) print_plan(ranks, *plan, ctx);
    if (opts->report_bindings) {
        for (const std::string &line : binding_report(machine, *plan, this_host, getpid()))
            std::fprintf(stderr, "%s\n", line.c_str());
    }
    return -1;
}

int run(int argc, char **argv) {
    Options opts;
    Prepared prepared;
    int early = prepare(argc, argv, &opts, &prepared);
    if (early >= 0) return early;
    SupervisorConfig config;
    config.grace_seconds = opts.grace_seconds;
    config.prefix_output = !opts.no_prefix;
    config.verbose = opts.verbose;
    config.signal_fd = install_signal_pipe();
    std::unique_ptr<ElasticDriver> elastic;
    if (opts.elastic) {
        ElasticConfig ec;
        ec.num_proc = opts.num_proc;
        ec.min_np = opts.min_np;
        ec.max_np = opts.max_np;
        ec.timeout_seconds = opts.elastic_timeout;
        ec.reset_limit = opts.reset_limit;
        ec.cooldown_min = opts.cooldown_min;
        ec.cooldown_max = opts.cooldown_max;
        ec.default_slots = opts.slots > 0 ? opts.slots : 1;
        ec.stop_grace_seconds = opts.grace_seconds;
        ec.discovery_script = opts.discovery_script;
        ec.controlled = opts.elastic_controller;
        ec.binding = opts.binding;
        ec.report_bindings = opts.report_bindings;
        ec.hvdrun_path = prepared.self;
        elastic = std::make_unique<ElasticDriver>(ec, std::move(prepared.ctx), opts.command,
                                                  std::move(prepared.hosts));
        if (opts.elastic_controller)
            return run_controlled(elastic.get(), config.signal_fd, STDIN_FILENO, STDOUT_FILENO);
        config.elastic = elastic.get();
        prepared.plan = elastic->take_launches();
    }
    Supervisor supervisor(config);
    supervisor.start(prepared.plan);
    return supervisor.wait();
}

}  // namespace
}  // namespace hvdrun

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], hvdrun::kExecBoundFlag) == 0)
        return hvdrun::exec_bound(argc, argv);
    try {
        return hvdrun::run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "hvdrun: %s\n", e.what());
        return 1;
    }
}
