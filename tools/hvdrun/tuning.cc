// SPDX-License-Identifier: Apache-2.0
#include "tuning.h"

#include <cstring>

#include "numbers.h"

namespace hvdrun {

enum class TuningKind {
    kMegabytes,      // whole MiB >= 0, passed on in bytes
    kCount,          // whole number >= 0
    kMilliseconds,   // decimal number >= 0
    kNoise,          // decimal number, 0 to 10
    kSeconds,        // whole seconds >= 0
    kPath,           // non-empty text
    kSwitch,         // a flag without value; in the config file a boolean
    kStallCheckOff,  // --no-stall-check; in the config file stall_check.enabled, inverted
    kLogLevel,       // trace, debug, info, warning, error, fatal (any case)
};

struct TuningFlag {
    const char *flag;
    const char *section;  // horovodrun's config file: section and key
    const char *key;
    const char *setting;  // the HVD_* variable every rank gets
    TuningKind kind;
    const char *group;  // --help heading
    const char *help;
};

namespace {

constexpr TuningFlag kTuningFlags[] = {
    {"--fusion-threshold-mb", "params", "fusion_threshold_mb", "HVD_FUSION_THRESHOLD",
     TuningKind::kMegabytes, "tuneable parameter arguments", "fusion buffer size in MiB"},
    {"--cycle-time-ms", "params", "cycle_time_ms", "HVD_CYCLE_TIME", TuningKind::kMilliseconds,
     "tuneable parameter arguments", "how long the engine holds new ops to fuse them"},
    {"--cache-capacity", "params", "cache_capacity", "HVD_CACHE_CAPACITY", TuningKind::kCount,
     "tuneable parameter arguments", "response cache entries (0: no cache)"},
    {"--hierarchical-allreduce", "params", "hierarchical_allreduce", "HVD_HIERARCHICAL_ALLREDUCE",
     TuningKind::kSwitch, "tuneable parameter arguments",
     "allreduce hierarchically across hosts at every size"},
    {"--hierarchical-allgather", "params", "hierarchical_allgather", "HVD_HIERARCHICAL_ALLGATHER",
     TuningKind::kSwitch, "tuneable parameter arguments",
     "allgather hierarchically across hosts at every size"},
    {"--autotune", "autotune", "enabled", "HVD_AUTOTUNE", TuningKind::kSwitch, "autotune arguments",
     "tune fusion threshold, cycle time and cache as the job runs"},
    {"--autotune-log-file", "autotune", "log_file", "HVD_AUTOTUNE_LOG", TuningKind::kPath,
     "autotune arguments", "CSV file of the autotune samples"},
    {"--autotune-warmup-samples", "autotune", "warmup_samples", "HVD_AUTOTUNE_WARMUP_SAMPLES",
     TuningKind::kCount, "autotune arguments", "samples discarded at the start"},
    {"--autotune-steps-per-sample", "autotune", "steps_per_sample", "HVD_AUTOTUNE_STEPS_PER_SAMPLE",
     TuningKind::kCount, "autotune arguments", "ops in one sample"},
    {"--autotune-bayes-opt-max-samples", "autotune", "bayes_opt_max_samples",
     "HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", TuningKind::kCount, "autotune arguments",
     "points scored before the best is kept"},
    {"--autotune-gaussian-process-noise", "autotune", "gaussian_process_noise",
     "HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", TuningKind::kNoise, "autotune arguments",
     "noise the model assumes in a score, 0 to 10"},
    {"--timeline-filename", "timeline", "filename", "HVD_TIMELINE", TuningKind::kPath,
     "timeline arguments", "Chrome-trace file written by rank 0"},
    {"--timeline-mark-cycles", "timeline", "mark_cycles", "HVD_TIMELINE_MARK_CYCLES",
     TuningKind::kSwitch, "timeline arguments", "mark every engine cycle in the timeline"},
    {"--no-stall-check", "stall_check", "enabled", "HVD_STALL_CHECK_DISABLE",
     TuningKind::kStallCheckOff, "stall check arguments", "do not report stalled ops"},
    {"--stall-check-warning-time-seconds", "stall_check", "warning_time_seconds",
     "HVD_STALL_CHECK_TIME_SECONDS", TuningKind::kSeconds, "stall check arguments",
     "report ops some ranks lack after this long"},
    {"--stall-check-shutdown-time-seconds", "stall_check", "shutdown_time_seconds",
     "HVD_STALL_SHUTDOWN_TIME_SECONDS", TuningKind::kSeconds, "stall check arguments",
     "then fail them and end the job after this long"},
    {"--log-level", "logging", "level", "HVD_LOG_LEVEL", TuningKind::kLogLevel, "logging arguments",
     "trace, debug, info, warning, error or fatal"},
};

// Horovod config keys that mean nothing to libhvd, and why (for the warning).
struct NoEffectKey {
    const char *section;
    const char *key;  // nullptr: the whole section
    const char *why;
};
constexpr NoEffectKey kNoEffectKeys[] = {
    {"logging", "with_timestamp", "libhvd's log lines always carry their time"},
    {"library_options", nullptr,
     "options of MPI, NCCL, oneCCL and Gloo, which libhvd does not use"},
};

std::string lower(std::string s) {
    for (char &c : s) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return s;
}

// YAML's spellings of a boolean (the ones PyYAML reads), into *out.
bool parse_yaml_bool(const std::string &text, bool *out) {
    std::string v = lower(text);
    if (v == "true" || v == "yes" || v == "on" || v == "1") {
        *out = true;
    } else if (v == "false" || v == "no" || v == "off" || v == "0") {
        *out = false;
    } else {
        return false;
    }
    return true;
}

// The setting's value for `text`, or false with what was expected in *expected.
bool convert(const TuningFlag &f, const std::string &text, std::string *value,
             std::string *expected) {
    long long n = 0;
    double x = 0;
    switch (f.kind) {
        case TuningKind::kMegabytes:
            *expected = "whole MiB, 0 to 1048576";
            if (!parse_whole(text, 0, 1048576, &n)) return false;
            *value = std::to_string(n * 1048576);
            return true;
        case TuningKind::kCount:
            *expected = "a whole number >= 0";
            if (!parse_whole(text, 0, 2147483647, &n)) return false;
            *value = std::to_string(n);
            return true;
        case TuningKind::kSeconds:
            *expected = "whole seconds, 0 to 86400";
            if (!parse_whole(text, 0, 86400, &n)) return false;
            *value = std::to_string(n);
            return true;
        case TuningKind::kMilliseconds:
            *expected = "milliseconds, 0 to 86400000";
            if (!parse_decimal(text, 86400000.0, &x)) return false;
            *value = text;
            return true;
        case TuningKind::kNoise:
            *expected = "a number, 0 to 10";
            if (!parse_decimal(text, 10.0, &x)) return false;
            *value = text;
            return true;
        case TuningKind::kPath:
            *expected = "a file name";
            if (text.empty()) return false;
            *value = text;
            return true;
        case TuningKind::kLogLevel: {
            *expected = "trace, debug, info, warning, error or fatal";
            std::string v = lower(text);
            for (const char *level : {"trace", "debug", "info", "warning", "error", "fatal"}) {
                if (v == level) {
                    *value = v;
                    return true;
                }
            }
            return false;
        }
        case TuningKind::kSwitch:
        case TuningKind::kStallCheckOff: {
            *expected = "true or false";
            bool on = false;
            if (!parse_yaml_bool(text, &on)) return false;
            if (f.kind == TuningKind::kStallCheckOff) on = !on;  // the key is "enabled"
            *value = on ? "1" : "0";
            return true;
        }
    }
    return false;
}

}  // namespace

const TuningFlag *find_tuning_flag(const std::string &name) {
    for (const TuningFlag &f : kTuningFlags) {
        if (name == f.flag) return &f;
    }
    return nullptr;
}

bool tuning_flag_takes_value(const TuningFlag &flag) {
    return flag.kind != TuningKind::kSwitch && flag.kind != TuningKind::kStallCheckOff;
}

bool add_tuning_flag(const TuningFlag &flag, const std::string &value,
                     std::vector<EnvVar> *settings, std::string *err) {
    if (!tuning_flag_takes_value(flag)) {
        settings->emplace_back(flag.setting, "1");
        return true;
    }
    std::string converted, expected;
    if (!convert(flag, value, &converted, &expected)) {
        *err = "invalid " + std::string(flag.flag) + " value '" + value + "' (expected " +
               expected + ")";
        return false;
    }
    settings->emplace_back(flag.setting, converted);
    return true;
}

ConfigKey add_config_entry(const std::string &section, const std::string &key,
                           const std::string &value, std::vector<EnvVar> *settings, bool *ok,
                           std::string *err) {
    *ok = true;
    for (const TuningFlag &f : kTuningFlags) {
        if (section != f.section || key != f.key) continue;
        std::string converted, expected;
        if (!convert(f, value, &converted, &expected)) {
            *ok = false;
            *err = "invalid value '" + value + "' for " + section + "." + key + " (expected " +
                   expected + ")";
        } else {
            settings->emplace_back(f.setting, converted);
        }
        return ConfigKey::kSetting;
    }
    for (const NoEffectKey &k : kNoEffectKeys) {
        if (section == k.section && (k.key == nullptr || key == k.key)) {
            *err = section + "." + key + " has no effect: " + k.why;
            return ConfigKey::kNoEffect;
        }
    }
    *err = "unknown key " + section + "." + key;
    return ConfigKey::kUnknown;
}

std::string tuning_usage() {
    std::string text;
    const char *group = "";
    for (const TuningFlag &f : kTuningFlags) {
        if (std::string(group) != f.group) {
            group = f.group;
            text += std::string("\n") + group + ":\n";
        }
        std::string left = std::string("  ") + f.flag + (tuning_flag_takes_value(f) ? " V" : "");
        if (left.size() < 27)
            left.resize(27, ' ');
        else
            left += "\n" + std::string(27, ' ');
        // The help starts in column 27 either way; the setting follows it if the line stays
        // within 80 columns, else on a line of its own.
        std::string setting = std::string("(") + f.setting + ")";
        bool fits = 27 + std::strlen(f.help) + 1 + setting.size() <= 80;
        text += left + f.help + (fits ? " " : "\n" + std::string(27, ' ')) + setting + "\n";
    }
    return text;
}

}  // namespace hvdrun
