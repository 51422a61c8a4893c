// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include "network_interfaces.h"
#include "numbers.h"
#include "tuning.h"

namespace hvdrun {
namespace {

// At most 9 digits, as the options have always been read.
bool parse_int(const std::string &text, int lo, int hi, int *out) {
    long long value = 0;
    if (text.size() > 9 || !parse_whole(text, lo, hi, &value)) return false;
    *out = static_cast<int>(value);
    return true;
}

bool is_env_name(const std::string &name) {
    if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
    for (char c : name) {
        bool ok =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return false;
    }
    return true;
}

// Each setter validates one option's value; `flag` is the spelling the user typed, so the
// message names what they wrote.
using Setter = bool (*)(const std::string &flag, const std::string &value, Options *o,
                        std::string *err);

bool set_num_proc(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (parse_int(v, 1, 1000000, &o->num_proc)) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected an integer >= 1)";
    return false;
}

bool set_hosts(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (v.empty()) {
        *err = flag + " needs a host list such as host1:2,host2:2";
        return false;
    }
    o->hosts = v;
    return true;
}

// A file name into the Options member `Field` (--hostfile, --config-file, -i).
template <std::string Options::*Field>
bool set_file(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (v.empty()) {
        *err = flag + " needs a file name";
        return false;
    }
    o->*Field = v;
    return true;
}

bool set_export(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (!is_env_name(v.substr(0, v.find('=')))) {
        *err = "invalid " + flag + " value '" + v + "' (expected NAME or NAME=VALUE)";
        return false;
    }
    o->exports.push_back(v);
    return true;
}

bool set_rdv_addr(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (v.empty()) {
        *err = flag + " needs a host name or address";
        return false;
    }
    o->rendezvous_addr = v;
    return true;
}

bool set_grace(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (!parse_seconds(v, &o->grace_seconds)) {
        *err = "invalid " + flag + " value '" + v + "' (expected seconds >= 0)";
        return false;
    }
    o->grace_given = true;
    return true;
}

bool set_ssh_port(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (parse_int(v, 1, 65535, &o->ssh_port)) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected a port 1..65535)";
    return false;
}

bool set_start_timeout(const std::string &flag, const std::string &v, Options *o,
                       std::string *err) {
    if (parse_int(v, 1, 86400, &o->start_timeout)) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected whole seconds 1..86400)";
    return false;
}

bool set_no_prefix(const std::string &, const std::string &, Options *o, std::string *) {
    o->no_prefix = true;
    return true;
}

constexpr const char *kBindValues = "core, numa, socket or none, optionally :overload-allowed";

bool set_bind_to(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (parse_bind_to(v, &o->binding)) {
        o->bind_given = true;
        return true;
    }
    *err = "invalid " + flag + " value '" + v + "' (expected " + kBindValues + ")";
    return false;
}

bool set_map_by(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (parse_map_by(v, &o->binding)) {
        o->map_given = true;
        return true;
    }
    *err = "invalid " + flag + " value '" + v + "' (expected slot, core, numa or socket)";
    return false;
}

bool set_report_bindings(const std::string &, const std::string &, Options *o, std::string *) {
    o->report_bindings = true;
    return true;
}

// --min-np / --max-np into the Options member `Field`; either makes the job elastic.
template <int Options::*Field>
bool set_elastic_np(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    o->elastic = true;
    if (parse_int(v, 1, 1000000, &(o->*Field))) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected an integer >= 1)";
    return false;
}

bool set_discovery(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    o->elastic = true;
    return set_file<&Options::discovery_script>(flag, v, o, err);
}

bool set_elastic_timeout(const std::string &flag, const std::string &v, Options *o,
                         std::string *err) {
    if (parse_seconds(v, &o->elastic_timeout) && o->elastic_timeout >= 1) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected seconds >= 1)";
    return false;
}

bool set_reset_limit(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (parse_int(v, 0, 1000000, &o->reset_limit)) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected an integer >= 0)";
    return false;
}

// "MIN MAX" (two arguments) or "MIN,MAX" (--blacklist-cooldown-range=MIN,MAX), seconds.
bool set_cooldown_range(const std::string &flag, const std::string &v, Options *o,
                        std::string *err) {
    size_t sep = v.find_first_of(" ,");
    double lo = 0, hi = 0;
    if (sep != std::string::npos && parse_seconds(v.substr(0, sep), &lo) &&
        parse_seconds(v.substr(sep + 1), &hi) && lo <= hi) {
        o->cooldown_min = lo;
        o->cooldown_max = hi;
        return true;
    }
    *err =
        "invalid " + flag + " value '" + v + "' (expected MIN MAX, seconds with 0 <= MIN <= MAX)";
    return false;
}

bool set_slots(const std::string &flag, const std::string &v, Options *o, std::string *err) {
    if (parse_int(v, 1, 1000000, &o->slots)) return true;
    *err = "invalid " + flag + " value '" + v + "' (expected an integer >= 1)";
    return false;
}

bool set_controller(const std::string &, const std::string &, Options *o, std::string *) {
    o->elastic = true;
    o->elastic_controller = true;
    return true;
}

bool set_verbose(const std::string &, const std::string &, Options *o, std::string *) {
    o->verbose = true;
    return true;
}

bool set_interfaces(const std::string &, const std::string &v, Options *o, std::string *err) {
    return parse_interface_list(v, &o->network_interfaces, err);
}

struct OptionSpec {
    const char *name;
    bool takes_value;
    Setter set;
    bool two_values = false;  // the value is the next two arguments, joined by a space
};

// Every accepted spelling. -n/--num-proc and -p/--ssh-port are Horovod's (horovodrun) names.
constexpr OptionSpec kOptions[] = {
    {"-np", true, set_num_proc},
    {"-n", true, set_num_proc},
    {"--num-proc", true, set_num_proc},
    {"-H", true, set_hosts},
    {"--hosts", true, set_hosts},
    {"--hostfile", true, set_file<&Options::hostfile>},
    {"--slots", true, set_slots},
    {"-x", true, set_export},
    {"--rendezvous-addr", true, set_rdv_addr},
    {"--grace-seconds", true, set_grace},
    {"-p", true, set_ssh_port},
    {"--ssh-port", true, set_ssh_port},
    {"--start-timeout", true, set_start_timeout},
    {"--no-prefix", false, set_no_prefix},
    {"--bind-to", true, set_bind_to},
    {"--map-by", true, set_map_by},
    {"--report-bindings", false, set_report_bindings},
    {"--verbose", false, set_verbose},
    {"-i", true, set_file<&Options::ssh_identity_file>},
    {"--ssh-identity-file", true, set_file<&Options::ssh_identity_file>},
    {"--config-file", true, set_file<&Options::config_file>},
    {"--network-interfaces", true, set_interfaces},
    {"--network-interface", true, set_interfaces},
    {"--min-np", true, set_elastic_np<&Options::min_np>},
    {"--max-np", true, set_elastic_np<&Options::max_np>},
    {"--host-discovery-script", true, set_discovery},
    {"--elastic-timeout", true, set_elastic_timeout},
    {"--reset-limit", true, set_reset_limit},
    {"--blacklist-cooldown-range", true, set_cooldown_range, true},
    {"--elastic-controller", false, set_controller},
};

const OptionSpec *find_option(const std::string &name) {
    for (const OptionSpec &spec : kOptions) {
        if (name == spec.name) return &spec;
    }
    return nullptr;
}

bool is_option(const std::string &arg) {
    return arg.size() > 1 && arg[0] == '-';
}

// Handles args[*i] (an option); advances *i past a separate value argument.
bool parse_one(const std::vector<std::string> &args, size_t *i, Options *out, std::string *err) {
    std::string name = args[*i];
    std::string value;
    bool inline_value = false;
    size_t eq = name.find('=');
    if (name.compare(0, 2, "--") == 0 && eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        inline_value = true;
    }
    const OptionSpec *spec = find_option(name);
    const TuningFlag *tuning = spec == nullptr ? find_tuning_flag(name) : nullptr;
    if (spec == nullptr && tuning == nullptr) {
        *err = "unknown option '" + name + "' (see hvdrun --help)";
        return false;
    }
    bool takes_value = spec != nullptr ? spec->takes_value : tuning_flag_takes_value(*tuning);
    const size_t values = spec != nullptr && spec->two_values ? 2 : 1;
    if (takes_value && !inline_value) {
        if (*i + values >= args.size()) {
            *err = "option " + name + (values == 2 ? " needs two values" : " needs a value");
            return false;
        }
        value = args[++*i];
        if (values == 2) value += " " + args[++*i];
    } else if (!takes_value && inline_value) {
        *err = "option " + name + " takes no value";
        return false;
    }
    if (tuning != nullptr) return add_tuning_flag(*tuning, value, &out->settings, err);
    return spec->set(name, value, out, err);
}

bool validate(const Options &opts, std::string *err) {
    if (opts.num_proc == 0) {
        *err = "missing -np N (the number of ranks to start)";
    } else if (!opts.hosts.empty() && !opts.hostfile.empty()) {
        *err = "-H and --hostfile cannot be used together";
    } else if (opts.command.empty() && !opts.elastic_controller) {
        *err = "missing the program to run";
    } else if (!opts.command.empty() && opts.elastic_controller) {
        *err = "--elastic-controller takes no program: the controller starts the workers";
    } else if (opts.elastic_controller && !opts.discovery_script.empty()) {
        *err =
            "--elastic-controller and --host-discovery-script cannot be used together: "
            "the controller sends the hosts";
    } else if (!opts.elastic && (opts.reset_limit >= 0 || opts.cooldown_min >= 0)) {
        *err = std::string(opts.reset_limit >= 0 ? "--reset-limit" : "--blacklist-cooldown-range") +
               " applies to elastic jobs (--min-np, --max-np or --host-discovery-script)";
    } else if (opts.elastic && opts.min_np > 0 && opts.min_np > opts.num_proc) {
        *err = "--min-np " + std::to_string(opts.min_np) + " is more than -np " +
               std::to_string(opts.num_proc);
    } else if (opts.elastic && opts.max_np > 0 && opts.max_np < opts.num_proc) {
        *err = "--max-np " + std::to_string(opts.max_np) + " is less than -np " +
               std::to_string(opts.num_proc);
    } else if (opts.elastic && opts.discovery_script.empty() && !opts.elastic_controller &&
               opts.max_np > opts.num_proc && opts.hosts.empty() && opts.hostfile.empty()) {
        *err =
            "--max-np above -np needs hosts to grow onto: --host-discovery-script, -H or "
            "--hostfile";
    } else {
        return true;
    }
    return false;
}

}  // namespace

bool parse_seconds(const std::string &text, double *out) {
    return parse_decimal(text, 1e6, out);
}

ParseOutcome parse_options(const std::vector<std::string> &args, Options *out, std::string *err) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &arg = args[i];
        if (arg == "-h" || arg == "--help") return ParseOutcome::kHelp;
        if (arg == "--version") return ParseOutcome::kVersion;
        if (arg == "-cb" || arg == "--check-build") return ParseOutcome::kCheckBuild;
        if (arg == "--" || !is_option(arg)) {
            size_t first = arg == "--" ? i + 1 : i;
            out->command.assign(args.begin() + static_cast<std::ptrdiff_t>(first), args.end());
            break;
        }
        if (!parse_one(args, &i, out, err)) return ParseOutcome::kError;
    }
    if (!validate(*out, err)) return ParseOutcome::kError;
    if (out->elastic) {
        if (out->min_np == 0) out->min_np = out->num_proc;
        bool discovering = !out->discovery_script.empty() || out->elastic_controller;
        if (out->max_np == 0) out->max_np = discovering ? 1000000 : out->num_proc;
    }
    return ParseOutcome::kRun;
}

bool apply_grace_env(const char *grace_env, Options *opts, std::string *err) {
    if (opts->grace_given || grace_env == nullptr || grace_env[0] == '\0') return true;
    if (parse_seconds(grace_env, &opts->grace_seconds)) return true;
    *err = std::string("invalid HVD_RUN_GRACE_SECONDS value '") + grace_env +
           "' (expected seconds >= 0)";
    return false;
}

bool apply_bind_env(const char *bind_env, Options *opts, std::string *err) {
    if (opts->bind_given) return true;
    if (bind_env == nullptr || bind_env[0] == '\0') {
        Level map_by = opts->binding.map_by;
        opts->binding.bind_to = map_by == Level::kSlot ? Level::kNone : map_by;
        return true;
    }
    std::string v(bind_env);
    if (parse_bind_to(v, &opts->binding)) return true;
    *err = "invalid HVD_RUN_BIND_TO value '" + v + "' (expected " + kBindValues + ")";
    return false;
}

}  // namespace hvdrun
