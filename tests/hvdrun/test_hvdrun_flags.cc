// SPDX-License-Identifier: Apache-2.0
// Unit tests of hvdrun's horovodrun-compatible flags: tuning flags and the settings they give,
// the YAML config file, --network-interfaces, --ssh-identity-file, --check-build and the
// grouped help. End to end they are tested by hvdrun_cases.sh (tuning_flags, config_file,
// network_interfaces, check_build).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

// cmocka 1.1.5's header has no extern "C" guard of its own.
extern "C" {
#include <cmocka.h>
}

#include <stdlib.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "config_file.h"
#include "network_interfaces.h"
#include "options.h"
#include "remote_command.h"

using namespace hvdrun;

namespace {

using Args = std::vector<std::string>;
using Settings = std::vector<std::pair<std::string, std::string>>;

ParseOutcome parse(const Args &args, Options *opts, std::string *err) {
    *opts = Options();
    err->clear();
    return parse_options(args, opts, err);
}

void test_tuning_flags_become_settings(void **) {
    Options o;
    std::string err;
    Args args = {"-np",
                 "2",
                 "--fusion-threshold-mb",
                 "32",
                 "--cycle-time-ms=2.5",
                 "--cache-capacity",
                 "0",
                 "--autotune",
                 "--autotune-log-file",
                 "/tmp/at.csv",
                 "--autotune-warmup-samples",
                 "3",
                 "--autotune-steps-per-sample",
                 "7",
                 "--autotune-bayes-opt-max-samples",
                 "12",
                 "--autotune-gaussian-process-noise=0.5",
                 "--timeline-filename",
                 "tl.json",
                 "--timeline-mark-cycles",
                 "--no-stall-check",
                 "--stall-check-warning-time-seconds",
                 "30",
                 "--stall-check-shutdown-time-seconds",
                 "90",
                 "--log-level",
                 "DEBUG",
                 "prog",
                 "--autotune"};
    assert_int_equal(static_cast<int>(parse(args, &o, &err)), static_cast<int>(ParseOutcome::kRun));
    Settings want = {{"HVD_FUSION_THRESHOLD", "33554432"},
                     {"HVD_CYCLE_TIME", "2.5"},
                     {"HVD_CACHE_CAPACITY", "0"},
                     {"HVD_AUTOTUNE", "1"},
                     {"HVD_AUTOTUNE_LOG", "/tmp/at.csv"},
                     {"HVD_AUTOTUNE_WARMUP_SAMPLES", "3"},
                     {"HVD_AUTOTUNE_STEPS_PER_SAMPLE", "7"},
                     {"HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "12"},
                     {"HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.5"},
                     {"HVD_TIMELINE", "tl.json"},
                     {"HVD_TIMELINE_MARK_CYCLES", "1"},
                     {"HVD_STALL_CHECK_DISABLE", "1"},
                     {"HVD_STALL_CHECK_TIME_SECONDS", "30"},
                     {"HVD_STALL_SHUTDOWN_TIME_SECONDS", "90"},
                     {"HVD_LOG_LEVEL", "debug"}};
    assert_true(o.settings == want);
    // After the program, a flag is the program's.
    assert_true((o.command == Args{"prog", "--autotune"}));
}

void test_tuning_flag_errors(void **) {
    Options o;
    std::string err;
    const std::vector<std::pair<Args, std::string>> cases = {
        {{"--fusion-threshold-mb", "-1"}, "invalid --fusion-threshold-mb value '-1'"},
        {{"--fusion-threshold-mb", "2000000"}, "whole MiB, 0 to 1048576"},
        {{"--cycle-time-ms", "fast"}, "invalid --cycle-time-ms value 'fast'"},
        {{"--cache-capacity", "1.5"}, "invalid --cache-capacity value '1.5'"},
        {{"--log-level", "loud"}, "trace, debug, info, warning, error or fatal"},
        {{"--stall-check-warning-time-seconds", "90000"}, "whole seconds, 0 to 86400"},
        {{"--autotune=1"}, "option --autotune takes no value"},
        {{"--autotune-gaussian-process-noise", "11"}, "a number, 0 to 10"},
        {{"--timeline-filename="}, "invalid --timeline-filename value ''"},
        {{"--cache-capacity"}, "invalid --cache-capacity value 'prog'"},
        {{"--hierarchical-allgather=1"}, "option --hierarchical-allgather takes no value"},
        {{"--network-interfaces", "eth0,,ib0"}, "invalid --network-interfaces entry ''"},
        {{"--network-interfaces", "eth0;rm"}, "invalid --network-interfaces entry 'eth0;rm'"},
        {{"-i", ""}, "-i needs a file name"},
    };
    for (const auto &c : cases) {
        Args args = {"-np", "1"};
        args.insert(args.end(), c.first.begin(), c.first.end());
        args.push_back("prog");
        assert_int_equal(static_cast<int>(parse(args, &o, &err)),
                         static_cast<int>(ParseOutcome::kError));
        if (err.find(c.second) == std::string::npos) {
            fail_msg("%s: error '%s' lacks '%s'", c.first[0].c_str(), err.c_str(),
                     c.second.c_str());
        }
    }
    assert_int_equal(static_cast<int>(parse({"-np", "1", "--cache-capacity"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kError));
    assert_string_equal(err.c_str(), "option --cache-capacity needs a value");
}

void test_host_flags(void **) {
    Options o;
    std::string err;
    assert_int_equal(static_cast<int>(parse({"-np", "2", "--network-interfaces", "eth0,ib0", "-i",
                                             "/k/id", "--config-file", "c.yaml", "p"},
                                            &o, &err)),
                     static_cast<int>(ParseOutcome::kRun));
    assert_true((o.network_interfaces == Args{"eth0", "ib0"}));
    assert_string_equal(o.ssh_identity_file.c_str(), "/k/id");
    assert_string_equal(o.config_file.c_str(), "c.yaml");
    assert_int_equal(
        static_cast<int>(
            parse({"--network-interface=lo", "--ssh-identity-file=k", "-np", "1", "p"}, &o, &err)),
        static_cast<int>(ParseOutcome::kRun));
    assert_true((o.network_interfaces == Args{"lo"}));
    assert_string_equal(o.ssh_identity_file.c_str(), "k");
    // --check-build needs nothing else; after the program it is the program's argument.
    assert_int_equal(static_cast<int>(parse({"--check-build"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kCheckBuild));
    assert_int_equal(static_cast<int>(parse({"-cb"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kCheckBuild));
    assert_int_equal(static_cast<int>(parse({"-np", "1", "p", "-cb"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kRun));
}

void test_ssh_argv_identity_and_interfaces(void **) {
    SshOptions ssh;
    ssh.port = 2222;
    ssh.identity_file = "/home/u/.ssh/id ed";
    ssh.interfaces = {"eth0", "ib0"};
    Args argv = ssh_argv("h1", ssh, "/w", {{"HVD_RANK", "1"}}, {"prog"});
    Args head(argv.begin(), argv.begin() + 8);
    assert_true((head == Args{"ssh", "-o", "BatchMode=yes", "-p", "2222", "-i",
                              "/home/u/.ssh/id ed", "h1"}));
    const std::string &line = argv.back();
    assert_int_equal(line.find("for i in eth0 ib0; do"), 0);
    assert_true(line.find("&& read -r HVD_SECRET") != std::string::npos);
    // Without the options nothing changes.
    Args plain = ssh_argv("h1", SshOptions(), "/w", {{"HVD_RANK", "1"}}, {"prog"});
    assert_int_equal(plain.back().find("read -r HVD_SECRET"), 0);
    assert_int_equal(plain.size(), 5);
}

// Runs `sh -c line`; its exit code.
int shell(const std::string &line) {
    int status = system(("sh -c '" + line + "' 2>/dev/null").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void test_interfaces_on_this_host(void **) {
    assert_string_equal(missing_local_interface({"lo"}).c_str(), "");
    assert_string_equal(missing_local_interface({"lo", "hvdnosuch0"}).c_str(), "hvdnosuch0");
    assert_string_equal(interface_ipv4_address("lo").c_str(), "127.0.0.1");
    assert_string_equal(interface_ipv4_address("hvdnosuch0").c_str(), "");
    assert_string_equal(interface_check_command({}).c_str(), "");
    // The remote check, run by a real shell: passes for lo, names the missing interface.
    assert_int_equal(shell(interface_check_command({"lo"}) + " && exit 7"), 7);
    assert_int_equal(shell(interface_check_command({"lo", "hvdnosuch0"}) + " && exit 7"), 2);
    std::string msg = interface_check_command({"hvdnosuch0"});
    assert_true(msg.find("has no network interface $i (--network-interfaces)") !=
                std::string::npos);
}

const char kHorovodConfig[] = R"(# horovodrun --config-file, as Horovod documents it
verbose: 2
params:
  fusion_threshold_mb: 32
  cycle_time_ms: 10   # fuse for longer
  cache_capacity: 2048
  hierarchical_allreduce: false
autotune:
  enabled: true
  log_file: "/tmp/autotune log.csv"
  warmup_samples: 5
  steps_per_sample: 20
  bayes_opt_max_samples: 50
timeline:
  filename: 'tl''s.json'
  mark_cycles: no
stall_check:
  enabled: false
  warning_time_seconds: 60
  shutdown_time_seconds: 0

logging:
  level: warning
library_options:
  num_nccl_streams: 2
)";

void test_config_file(void **) {
    Settings settings;
    std::vector<std::string> warnings;
    std::string err;
    assert_true(parse_config_text(kHorovodConfig, "c.yaml", &settings, &warnings, &err));
    Settings want = {{"HVD_FUSION_THRESHOLD", "33554432"},
                     {"HVD_CYCLE_TIME", "10"},
                     {"HVD_CACHE_CAPACITY", "2048"},
                     {"HVD_HIERARCHICAL_ALLREDUCE", "0"},
                     {"HVD_AUTOTUNE", "1"},
                     {"HVD_AUTOTUNE_LOG", "/tmp/autotune log.csv"},
                     {"HVD_AUTOTUNE_WARMUP_SAMPLES", "5"},
                     {"HVD_AUTOTUNE_STEPS_PER_SAMPLE", "20"},
                     {"HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "50"},
                     {"HVD_TIMELINE", "tl's.json"},
                     {"HVD_TIMELINE_MARK_CYCLES", "0"},
                     {"HVD_STALL_CHECK_DISABLE", "1"},
                     {"HVD_STALL_CHECK_TIME_SECONDS", "60"},
                     {"HVD_STALL_SHUTDOWN_TIME_SECONDS", "0"},
                     {"HVD_LOG_LEVEL", "warning"}};
    assert_true(settings == want);
    std::vector<std::string> want_warnings = {
        "c.yaml:2: verbose has no effect here: use hvdrun --verbose",
        "c.yaml:25: library_options.num_nccl_streams has no effect: options of MPI, NCCL, "
        "oneCCL and Gloo, which libhvd does not use"};
    assert_int_equal(warnings.size(), want_warnings.size());
    for (size_t i = 0; i < warnings.size(); ++i) {
        assert_string_equal(warnings[i].c_str(), want_warnings[i].c_str());
    }
    // stall_check.enabled: true turns the check on (the setting says "disable").
    settings.clear();
    assert_true(
        parse_config_text("stall_check:\n    enabled: yes\n", "f", &settings, &warnings, &err));
    assert_true((settings == Settings{{"HVD_STALL_CHECK_DISABLE", "0"}}));
}

void test_config_file_errors(void **) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"params:\n  fusion_threshold_mb: lots\n",
         "f:2: invalid value 'lots' for params.fusion_threshold_mb (expected whole MiB"},
        {"params:\n  cycle_time: 5\n", "f:2: unknown key params.cycle_time"},
        {"prams:\n  cycle_time_ms: 5\n", "f:2: unknown key prams.cycle_time_ms"},
        {"params:\n\tcycle_time_ms: 5\n", "f:2: tabs are not allowed"},
        {"params:\n  cycle_time_ms: 5\n    cache_capacity: 9\n", "f:3: inconsistent indentation"},
        {"  cycle_time_ms: 5\n", "f:1: indented line outside a section"},
        {"params:\n  cycle_time_ms: [5]\n", "f:2: only plain values are supported"},
        {"timeline:\n  filename: \"open\n", "f:2: unterminated or trailing quote"},
        {"timeline:\n  filename:\n", "f:2: 'filename' has no value"},
        {"fusion_threshold_mb: 5\n", "f:1: 'fusion_threshold_mb' is not a section"},
        {"params\n", "f:1: expected 'key: value' or 'section:'"},
        {"autotune:\n  enabled: maybe\n", "f:2: invalid value 'maybe' for autotune.enabled"},
    };
    for (const auto &c : cases) {
        Settings settings;
        std::vector<std::string> warnings;
        std::string err;
        assert_false(parse_config_text(c.first, "f", &settings, &warnings, &err));
        if (err.find(c.second) != 0) {
            fail_msg("config '%s': error '%s' does not start with '%s'", c.first.c_str(),
                     err.c_str(), c.second.c_str());
        }
    }
    Settings s;
    std::vector<std::string> w;
    std::string err;
    assert_false(read_config_file("/nonexistent/hvd.yaml", &s, &w, &err));
    assert_string_equal(err.c_str(), "cannot read the config file '/nonexistent/hvd.yaml'");
}

void test_help_is_grouped(void **) {
    std::string help = usage_text();
    const char *groups[] = {
        "optional arguments:", "tuneable parameter arguments:", "autotune arguments:",
        "timeline arguments:", "stall check arguments:",        "logging arguments:",
        "host arguments:"};
    size_t at = 0;
    for (const char *g : groups) {
        size_t found = help.find(std::string("\n") + g + "\n");
        if (found == std::string::npos || found < at) fail_msg("help lacks or misorders '%s'", g);
        at = found;
    }
    for (const char *flag : {"--fusion-threshold-mb V", "--no-stall-check", "--check-build",
                             "--config-file", "--ssh-identity-file", "--network-interfaces"}) {
        if (help.find(flag) == std::string::npos) fail_msg("help lacks %s", flag);
    }
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuning_flags_become_settings),
        cmocka_unit_test(test_tuning_flag_errors),
        cmocka_unit_test(test_host_flags),
        cmocka_unit_test(test_ssh_argv_identity_and_interfaces),
        cmocka_unit_test(test_interfaces_on_this_host),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_config_file_errors),
        cmocka_unit_test(test_help_is_grouped),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
