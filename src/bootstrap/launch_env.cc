// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/launch_env.h"

#include <cerrno>
#include <cstdlib>

#include "bootstrap/sha256.h"
#include "common/env.h"
#include "common/error.h"
#include "config/read.h"
#include "config/settings.h"

namespace hvd::bootstrap {

namespace {

// The variables one launcher sets; nullptr where it sets none.
struct LauncherVars {
    const char *launcher;
    const char *rank;
    const char *size;
    const char *local_rank;
    const char *local_size;
};

constexpr LauncherVars kLaunchers[] = {
    {"hvdrun", "HVD_RANK", "HVD_SIZE", "HVD_LOCAL_RANK", "HVD_LOCAL_SIZE"},
    {"hvdrun", "HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

// Job id variables after HVD_JOB_ID, most specific launcher first.
constexpr const char *kJobIdVars[] = {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID",
                                      "PMI_KVSNAME", "TORCHELASTIC_RUN_ID"};

[[noreturn]] void invalid(const std::string &msg) {
    throw Error(HVD_ERR_INVALID_ARG, msg);
}

class Env {
  public:
    explicit Env(const EnvLookup &lookup) : lookup_(lookup) {}

    const char *get(const char *name) const {
        const char *v = name ? lookup_(name) : nullptr;
        return (v && *v) ? v : nullptr;
    }

    // HVD_<name>, else HOROVOD_<name> (config/settings.h); *name is set to the variable
    // found (or HVD_<name>). Read here rather than through config/read.h: launch settings
    // come from the injected lookup, and a malformed one is an error, not a warning.
    const char *setting(config::Setting s, std::string *name) const {
        const config::SettingInfo &row = config::info(s);
        *name = std::string("HVD_") + row.name;
        if (const char *v = get(name->c_str())) return v;
        if (!row.horovod_alias) return nullptr;
        std::string alias = std::string("HOROVOD_") + row.name;
        if (const char *v = get(alias.c_str())) {
            *name = alias;
            return v;
        }
        return nullptr;
    }

    // The variable as an integer in [lo, hi]; invalid() naming it otherwise.
    int64_t integer(const std::string &name, int64_t lo, int64_t hi) const {
        const char *text = get(name.c_str());
        errno = 0;
        char *end = nullptr;
        long long v = std::strtoll(text, &end, 10);
        // strtoll would skip leading blanks; a launcher never writes them, a typo might.
        bool starts_ok = (*text >= '0' && *text <= '9') || *text == '-';
        if (!starts_ok || errno != 0 || end == text || *end != '\0')
            invalid(strprintf("%s=%s is not an integer", name.c_str(), text));
        if (v < lo || v > hi)
            invalid(strprintf("%s=%s is outside [%lld, %lld]", name.c_str(), text,
                              static_cast<long long>(lo), static_cast<long long>(hi)));
        return v;
    }

  private:
    const EnvLookup &lookup_;
};

const LauncherVars *find_launcher(const Env &env) {
    for (const LauncherVars &l : kLaunchers) {
        bool has_rank = env.get(l.rank) != nullptr;
        bool has_size = env.get(l.size) != nullptr;
        if (has_rank && has_size) return &l;
        if (has_rank || has_size)
            invalid(strprintf("%s is set but %s is not", has_rank ? l.rank : l.size,
                              has_rank ? l.size : l.rank));
    }
    invalid(
        "no launcher found: set HVD_RANK and HVD_SIZE, start the job with hvdrun, mpirun, "
        "srun or torchrun, or pass rank and size to hvd_init");
}

void read_ranks(const Env &env, const LauncherVars &l, LaunchInfo *info) {
    info->launcher = l.launcher;
    info->size = static_cast<int32_t>(env.integer(l.size, 1, INT32_MAX));
    info->rank = static_cast<int32_t>(env.integer(l.rank, 0, info->size - 1));
    if (env.get(l.local_size))
        info->local_size = static_cast<int32_t>(env.integer(l.local_size, 1, info->size));
    if (env.get(l.local_rank)) {
        int64_t hi = (info->local_size > 0 ? info->local_size : info->size) - 1;
        info->local_rank = static_cast<int32_t>(env.integer(l.local_rank, 0, hi));
    }
}

// An address variable and its port variable, both or neither. Returns false if neither.
bool read_endpoint(const Env &env, const std::string &addr_var, const std::string &port_var,
                   int64_t max_port, std::string *addr, int64_t *port) {
    const char *a = env.get(addr_var.c_str());
    const char *p = env.get(port_var.c_str());
    if (!a && !p) return false;
    if (!a || !p)
        invalid(strprintf("%s is set but %s is not", a ? addr_var.c_str() : port_var.c_str(),
                          a ? port_var.c_str() : addr_var.c_str()));
    *addr = a;
    *port = env.integer(port_var, 1, max_port);
    return true;
}

void read_rendezvous(const Env &env, LaunchInfo *info) {
    std::string addr_var, port_var, addr;
    int64_t port = 0;
    const char *hvd_addr = env.setting(config::Setting::kRendezvousAddr, &addr_var);
    const char *hvd_port = env.setting(config::Setting::kRendezvousPort, &port_var);
    if (hvd_addr || hvd_port) {
        read_endpoint(env, addr_var, port_var,
                      static_cast<int64_t>(config::info(config::Setting::kRendezvousPort).max),
                      &addr, &port);
    } else if (read_endpoint(env, "MASTER_ADDR", "MASTER_PORT", 65534, &addr, &port)) {
        ++port;  // MASTER_PORT itself belongs to torch's TCPStore
    }
    info->rdv_addr = addr;
    info->rdv_port = static_cast<int32_t>(port);
}

std::string read_job_id(const Env &env) {
    std::string name;
    if (const char *v = env.setting(config::Setting::kJobId, &name)) return v;
    for (const char *var : kJobIdVars) {
        const char *v = env.get(var);
        if (!v) continue;
        std::string id = v;
        // One Slurm allocation runs many steps (srun calls) that may overlap.
        if (std::string(var) == "SLURM_JOB_ID" && env.get("SLURM_STEP_ID"))
            id += std::string(".") + env.get("SLURM_STEP_ID");
        return id;
    }
    return "";
}

bool env_bool(const Env &env, config::Setting s) {
    std::string name;
    const char *v = env.setting(s, &name);
    if (!v) return config::info(s).default_number != 0;
    bool value = false;
    if (config::parse_bool(v, &value)) return value;
    invalid(strprintf("%s=%s is not a boolean (1 or 0)", name.c_str(), v));
}

// HVD_SECRET (or HOROVOD_SECRET) for a rendezvous through the launcher's key-value store,
// which carries "address port secret": none when unset; one with whitespace is refused.
std::string launcher_store_secret(const Env &env) {
    std::string name;
    const char *v = env.setting(config::Setting::kSecret, &name);
    if (v == nullptr) return "";
    if (std::string(v).find_first_of(" \t\n\r\f\v") != std::string::npos)
        invalid(name +
                " holds whitespace, which the launcher's key-value store cannot carry "
                "with rank 0's address (the value is not shown)");
    return v;
}

void read_secret(const Env &env, LaunchInfo *info) {
    std::string name;
    if (const char *v = env.setting(config::Setting::kSecret, &name)) {
        info->secret = v;
        return;
    }
    const bool one_host =
        info->rdv_addr.empty() || info->size == 1 || info->local_size == info->size;
    if (one_host) {
        // Rank 0 makes a random secret; the private file carries it to the others.
        info->secret_from_file = true;
        if (info->job_id.empty())
            info->job_id = "rdv-" + info->rdv_addr + ":" + std::to_string(info->rdv_port);
        return;
    }
    if (!env_bool(env, config::Setting::kAllowUnauthenticated))
        invalid(strprintf(
            "%s launch: the job may span hosts (%s) and has no secret, so anyone who knows its "
            "id and address could join it. Set HVD_SECRET to the same random value on every "
            "rank (e.g. export HVD_SECRET=$(openssl rand -hex 32), then mpirun -x HVD_SECRET "
            "or srun --export=ALL), or start the job with hvdrun, or set "
            "HVD_ALLOW_UNAUTHENTICATED=1 to accept an unauthenticated job",
            info->launcher.c_str(),
            info->local_size > 0
                ? strprintf("local size %d of %d", info->local_size, info->size).c_str()
                : "the launcher gives no local size"));
    info->secret = sha256_hex("hvd derived secret|" + info->job_id + "|" + info->rdv_addr + ":" +
                              std::to_string(info->rdv_port));
    info->secret_derived = true;
}

// The first host of a Slurm host list ("node[07-09,12],gpu1" -> "node07"): the text before the
// first comma outside brackets, each bracket group replaced by its first number (as written,
// zero padding kept). "" when it is malformed.
std::string first_slurm_host(const std::string &list) {
    std::string host;
    size_t i = 0;
    while (i < list.size() && list[i] != ',') {
        if (list[i] != '[') {
            host += list[i++];
            continue;
        }
        const size_t close = list.find(']', i);
        if (close == std::string::npos) return "";
        const std::string group = list.substr(i + 1, close - i - 1);
        const std::string first = group.substr(0, group.find_first_of(",-"));
        if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos) return "";
        host += first;
        i = close + 1;
    }
    return host;
}

// srun across nodes without an address or PMIx: rank 0's node (the step's first: srun puts
// task 0 there) and the first port Slurm reserved for the step (SLURM_STEP_RESV_PORTS, where
// its MpiParams reserve ports), if it gives both.
void read_slurm_rendezvous(const Env &env, LaunchInfo *info) {
    const char *nodes = env.get("SLURM_STEP_NODELIST");
    const char *ports = env.get("SLURM_STEP_RESV_PORTS");
    if (nodes == nullptr || ports == nullptr) return;
    const std::string host = first_slurm_host(nodes);
    if (host.empty()) invalid(strprintf("SLURM_STEP_NODELIST=%s is not a Slurm host list", nodes));
    const std::string text = ports;
    const std::string first = text.substr(0, text.find_first_of(",-"));
    char *end = nullptr;
    const long port = std::strtol(first.c_str(), &end, 10);
    if (first.empty() || *end != '\0' || port < 1 || port > 65535)
        invalid(strprintf("SLURM_STEP_RESV_PORTS=%s is not a port range", ports));
    const char *me = env.get("SLURMD_NODENAME");
    if (info->rank == 0 && me != nullptr && host != me)
        invalid(
            strprintf("slurm launch: rank 0 runs on %s, not on the step's first node %s "
                      "(SLURM_STEP_NODELIST), where the others look for it; set "
                      "HVD_RENDEZVOUS_ADDR and HVD_RENDEZVOUS_PORT",
                      me, host.c_str()));
    info->rdv_addr = host;
    info->rdv_port = static_cast<int32_t>(port);
}

LaunchInfo detect(const Env &env) {
    LaunchInfo info;
    read_ranks(env, *find_launcher(env), &info);
    read_rendezvous(env, &info);
    info.job_id = read_job_id(env);
    if (info.rdv_addr.empty() && info.launcher == "pmi" && env.get("PMI_FD") != nullptr) {
        info.pmi_fd = static_cast<int32_t>(env.integer("PMI_FD", 0, INT32_MAX));
        info.spans_hosts = info.local_size > 0 && info.local_size < info.size;
        info.secret = launcher_store_secret(env);
        return info;
    }
    if (info.rdv_addr.empty() && info.job_id.empty())
        invalid(
            strprintf("%s launch: no rendezvous address and no job id; set "
                      "HVD_RENDEZVOUS_ADDR and HVD_RENDEZVOUS_PORT (rank 0's host and a free "
                      "port), or HVD_JOB_ID for a single-host job, or start the job with "
                      "hvdrun",
                      info.launcher.c_str()));
    // srun gives no local size, but its step's node count tells one host from several.
    const char *step_nodes = info.launcher == "slurm" ? env.get("SLURM_STEP_NUM_NODES") : nullptr;
    const int64_t nodes = step_nodes ? env.integer("SLURM_STEP_NUM_NODES", 1, info.size) : 0;
    if (nodes == 1) info.local_size = info.size;
    const bool one_host = info.size == 1 || info.local_size == info.size;
    info.spans_hosts = nodes > 1 || (info.local_size > 0 && !one_host);
    const char *pmix_rank = env.get("PMIX_RANK");
    const bool pmix_launcher = info.launcher == "openmpi" || info.launcher == "slurm";
    if (info.rdv_addr.empty() && !one_host && pmix_launcher && env.get("PMIX_NAMESPACE") &&
        pmix_rank != nullptr && std::to_string(info.rank) == pmix_rank) {
        info.rdv_via_pmix = true;
        info.secret = launcher_store_secret(env);
        if (info.secret.empty() && !info.spans_hosts)
            info.secret_from_file = true;  // file rendezvous, should PMIx be missing
        return info;
    }
    if (info.rdv_addr.empty() && info.spans_hosts && info.launcher == "slurm")
        read_slurm_rendezvous(env, &info);
    if (info.rdv_addr.empty() && info.spans_hosts)
        invalid(strprintf(
            "%s launch: the job spans hosts (%s) and has no rendezvous address; set "
            "HVD_RENDEZVOUS_ADDR and HVD_RENDEZVOUS_PORT (rank 0's host and a free port) and "
            "HVD_SECRET, start the job with hvdrun, or with a launcher that runs a PMIx "
            "server (mpirun, srun --mpi=pmix) or PMI-1 server (MPICH's mpiexec)",
            info.launcher.c_str(),
            nodes > 1 ? strprintf("%lld nodes", static_cast<long long>(nodes)).c_str()
                      : strprintf("local size %d of %d", info.local_size, info.size).c_str()));
    read_secret(env, &info);
    return info;
}

}  // namespace

hvd_status_t detect_launch(const EnvLookup &env, LaunchInfo *out, std::string *err) {
    try {
        *out = detect(Env(env));
        return HVD_OK;
    } catch (const Error &e) {
        if (err) *err = e.what();
        return e.status();
    }
}

bool uses_pmi_port(const EnvLookup &lookup) {
    const Env env(lookup);
    if (env.get("PMI_PORT") == nullptr || env.get("PMI_ID") == nullptr) return false;
    for (const LauncherVars &l : kLaunchers)
        if (env.get(l.rank) != nullptr) return false;
    return true;
}

EnvLookup process_env() {
    return [](const char *name) { return env_get(name); };
}

hvd_status_t detect_elastic(const EnvLookup &lookup, bool *elastic, ElasticLaunch *out,
                            std::string *err) {
    try {
        Env env(lookup);
        std::string addr_var, port_var, id_var, timeout_var, secret_var;
        const char *addr = env.setting(config::Setting::kElasticAddr, &addr_var);
        *elastic = addr != nullptr;
        if (!*elastic) return HVD_OK;
        env.setting(config::Setting::kElasticPort, &port_var);
        env.setting(config::Setting::kWorkerId, &id_var);
        ElasticLaunch e;
        e.addr = addr;
        for (const std::string *var : {&port_var, &id_var}) {
            if (!env.get(var->c_str()))
                invalid(strprintf("%s is set but %s is not", addr_var.c_str(), var->c_str()));
        }
        e.port = static_cast<int32_t>(env.integer(port_var, 1, 65535));
        e.worker_id = env.integer(id_var, 0, INT32_MAX);
        const config::SettingInfo &t = config::info(config::Setting::kElasticTimeout);
        int64_t seconds = static_cast<int64_t>(t.default_number);
        if (env.setting(config::Setting::kElasticTimeout, &timeout_var))
            seconds =
                env.integer(timeout_var, static_cast<int64_t>(t.min), static_cast<int64_t>(t.max));
        e.timeout_ms = seconds * 1000;
        const char *secret = env.setting(config::Setting::kSecret, &secret_var);
        if (!secret)
            invalid(
                strprintf("%s is set but %s is not: an elastic worker needs the job's "
                          "secret (start it with hvdrun)",
                          addr_var.c_str(), secret_var.c_str()));
        e.secret = secret;
        *out = e;
        return HVD_OK;
    } catch (const Error &e) {
        if (err) *err = e.what();
        return e.status();
    }
}

EnvLookup with_overrides(EnvLookup base, std::vector<std::pair<std::string, std::string>> vars) {
    return [base = std::move(base), vars = std::move(vars)](const char *name) -> const char * {
        for (const auto &v : vars)
            if (v.first == name) return v.second.c_str();
        return base(name);
    };
}

}  // namespace hvd::bootstrap
