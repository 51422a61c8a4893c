// SPDX-License-Identifier: Apache-2.0
// Command-line options of hvdrun, parsed without touching the process state so that the
// parser can be unit-tested.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "binding_policy.h"

namespace hvdrun {

struct Options {
    int num_proc = 0;      // -np / -n / --num-proc; required, >= 1
    std::string hosts;     // -H / --hosts "host:slots,..."; empty: all local
    std::string hostfile;  // --hostfile; exclusive with -H
    int slots = 0;  // --slots: slots of a host listed without them (-H, hostfile, discovery); 0: 1
    std::vector<std::string> exports;  // -x NAME or -x NAME=VALUE, in order given
    std::string rendezvous_addr;       // --rendezvous-addr; empty: derived from placement
    double grace_seconds = 5.0;        // --grace-seconds or HVD_RUN_GRACE_SECONDS
    bool grace_given = false;          // true when --grace-seconds was on the command line
    bool no_prefix = false;            // --no-prefix
    int ssh_port = 0;                  // -p / --ssh-port; 0: ssh's default
    int start_timeout = 0;             // --start-timeout seconds for ssh to connect; 0: default
    bool verbose = false;              // --verbose: print placement and remote commands
    std::string ssh_identity_file;     // -i / --ssh-identity-file for remote hosts
    std::string config_file;           // --config-file: horovodrun's YAML settings file
    std::vector<std::string> network_interfaces;  // --network-interfaces / --network-interface
    // HVD_* settings from horovodrun's tuning flags (--cycle-time-ms ...), in order given
    std::vector<std::pair<std::string, std::string>> settings;
    BindPolicy binding;            // --map-by, --bind-to (default: slot, none)
    bool bind_given = false;       // true when --bind-to was on the command line
    bool map_given = false;        // true when --map-by was on the command line
    bool report_bindings = false;  // --report-bindings
    // Elastic mode (any of these given): --min-np, --max-np, --host-discovery-script;
    // --elastic-timeout, --reset-limit and --blacklist-cooldown-range apply to it. 0: not
    // given (min defaults to -np; max to -np, or unbounded with a discovery script).
    int min_np = 0;
    int max_np = 0;
    std::string discovery_script;
    double elastic_timeout = 600.0;
    int reset_limit = -1;  // --reset-limit: membership changes allowed; -1 no limit
    // --blacklist-cooldown-range MIN MAX: seconds a failed host stays out (host_blacklist.h);
    // -1: for the rest of the job.
    double cooldown_min = -1.0;
    double cooldown_max = -1.0;
    bool elastic = false;
    // --elastic-controller: elastic, with workers started by the program that runs hvdrun
    // (controlled_job.h); no command.
    bool elastic_controller = false;
    std::vector<std::string> command;  // program and its arguments, untouched
};

enum class ParseOutcome { kRun, kHelp, kVersion, kCheckBuild, kError };

// Parses argv[1..] (args excludes the program name). -h/--help, --version and
// -cb/--check-build among the options end parsing with their outcome. Options end at the first
// argument that is not an option, or at "--"; everything after belongs to the launched program.
// Long options accept both "--name value" and "--name=value". On kError *err says what is wrong.
ParseOutcome parse_options(const std::vector<std::string> &args, Options *out, std::string *err);

// Applies HVD_RUN_GRACE_SECONDS (value of the variable, nullptr when unset) unless the
// command line already set the grace period. Returns false with *err on a malformed value.
bool apply_grace_env(const char *grace_env, Options *opts, std::string *err);

// Completes the binding policy when the command line gave no --bind-to: HVD_RUN_BIND_TO (a
// --bind-to value; the variable's value, nullptr when unset), else, as mpirun does, binding
// to the place --map-by core|numa|socket maps to, else none. Returns false with *err on a
// malformed HVD_RUN_BIND_TO.
bool apply_bind_env(const char *bind_env, Options *opts, std::string *err);

// Parses a non-negative decimal number of seconds ("5", "0.5"). Returns false if malformed.
bool parse_seconds(const std::string &text, double *out);

// The text printed by -h / --help.
std::string usage_text();

}  // namespace hvdrun
