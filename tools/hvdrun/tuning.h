// SPDX-License-Identifier: Apache-2.0
// horovodrun's tuning flags (--fusion-threshold-mb, --cycle-time-ms, --autotune, ...) and the
// keys of its YAML config file, both turned into the HVD_* settings every rank gets. One table
// holds each flag's spelling, config key, setting and how its value is checked and converted.
#pragma once

#include <string>
#include <vector>

#include "rank_env.h"

namespace hvdrun {

struct TuningFlag;

// The tuning flag spelled `name` ("--cycle-time-ms"), or nullptr.
const TuningFlag *find_tuning_flag(const std::string &name);

// Whether the flag takes a value ("--cycle-time-ms 5") or is a switch ("--autotune").
bool tuning_flag_takes_value(const TuningFlag &flag);

// The setting a flag given on the command line stands for (value empty for a switch), appended
// to *settings. Returns false with *err naming the flag and what is wrong with the value.
bool add_tuning_flag(const TuningFlag &flag, const std::string &value,
                     std::vector<EnvVar> *settings, std::string *err);

// What a key of horovodrun's config file ("params", "fusion_threshold_mb") does in libhvd.
enum class ConfigKey { kSetting, kNoEffect, kUnknown };

// Adds the setting for `section.key: value` from a config file to *settings. kNoEffect: a
// Horovod key libhvd has no use for (e.g. params.hierarchical_allreduce; *err says why, for a
// warning); kUnknown: no such key. A malformed value is kSetting with false returned via
// *ok and the reason in *err.
ConfigKey add_config_entry(const std::string &section, const std::string &key,
                           const std::string &value, std::vector<EnvVar> *settings, bool *ok,
                           std::string *err);

// The help lines of the tuning flags, grouped as horovodrun's --help groups them.
std::string tuning_usage();

}  // namespace hvdrun
