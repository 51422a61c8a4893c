// SPDX-License-Identifier: Apache-2.0
// The one declaration of every environment setting libhvd reads: its name (HVD_<name>, and
// Horovod's HOROVOD_<name> where accepted), type, default, range, unit and description. The
// code reads a setting through config/read.h by naming its entry here, hvd_config_get/set find
// their keys here (config/runtime_config.h), and README.md's table of settings is generated
// from it (tools/settings_table) and checked against it (ctest docs.settings_table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvd::config {

enum class Type : uint8_t {
    kInt,     // decimal integer (strtoll)
    kDouble,  // number (strtod)
    kBool,    // 1/true/yes/on or 0/false/no/off, any case
    kString,  // any text; "" counts as unset
    kEnum,    // one of SettingInfo::values
};

// Who sets it: tuning settings are the user's; launch settings say which job a process
// belongs to and are normally set by hvdrun (or another launcher, see README "Launching").
enum class Section : uint8_t { kTuning, kLaunch };

// What a numeric value outside [min, max] becomes (silently, as before the table existed).
enum class OutOfRange : uint8_t {
    kClamp,    // the nearest bound
    kDefault,  // the default
};

// Every setting, in the order of the table (and of README's table).
enum class Setting : int32_t {
    // Tuning: init, logging, failure detection
    kStartTimeout,
    kOpTimeout,
    kPeerTimeout,
    kLogLevel,
    kHostname,
    kUcxErrMode,
    kIface,
    kGlooIface,
    // Tuning: the engine
    kFusionThreshold,
    kCycleTime,
    kCacheCapacity,
    kAutotune,
    kAutotuneSearch,
    kAutotuneLog,
    kAutotuneWarmupSamples,
    kAutotuneStepsPerSample,
    kAutotuneBayesOptMaxSamples,
    kAutotuneGaussianProcessNoise,
    kTimeline,
    kTimelineMarkCycles,
    kStallCheckTimeSeconds,
    kStallCheckDisable,
    kStallShutdownTimeSeconds,
    kSpinUs,
    kSpinYield,
    kEngineBatch,
    // Tuning: the collectives
    kAllreduceRdMaxBytes,
    kAllreduceRingChunkBytes,
    kBroadcastTreeMaxBytes,
    kBroadcastChunkBytes,
    kShm,
    kShmSlotBytes,
    kShmOneShotMaxBytes,
    kShmSingleCopyMinBytes,
    kShmSingleCopyMaxBytes,
    kShmMappedMinBytes,
    kHierarchicalAllreduce,
    kHierarchicalAllreduceMinBytes,
    kHierarchicalAllgather,
    kHierarchicalAllgatherMaxBytes,
    kHierarchicalBroadcast,
    kHierarchicalBroadcastMinBytes,
    // Tuning: GPU tensors
    kGpuOperations,
    kGpuModule,
    kNcclLibrary,
    // Launch
    kRank,
    kSize,
    kLocalRank,
    kLocalSize,
    kRendezvousAddr,
    kRendezvousPort,
    kJobId,
    kPmixLibrary,
    kSecret,
    kAllowUnauthenticated,
    kElasticAddr,
    kElasticPort,
    kWorkerId,
    kElasticTimeout,
    kCount  // not a setting
};

// A bound that means "none" for a numeric range: 2^53, beyond which doubles skip integers.
constexpr double kUnbounded = 9007199254740992.0;

// One row of the table. Static storage; every pointer stays valid for the process's lifetime.
struct SettingInfo {
    Setting id;
    const char *name;    // without prefix: the variable is HVD_<name>
    bool horovod_alias;  // HOROVOD_<name> is accepted too (HVD_<name> wins when both are set)
    Type type;
    Section section;
    double default_number;        // kInt, kDouble, kBool (0/1): the default
    const char *default_string;   // kString, kEnum: the default; nullptr = unset
    double min, max;              // kInt, kDouble: the accepted range (kUnbounded: none)
    OutOfRange out_of_range;      // kInt, kDouble: what a value outside [min, max] becomes
    const char *unit;             // "bytes", "s", "ms", "us", "entries" or ""
    const char *values;           // kEnum: the values, separated by '|'; else nullptr
    int32_t config_key;           // the hvd_config_key_t that reaches it at run time, or -1
    const char *config_key_name;  // its name ("HVD_CONFIG_FUSION_THRESHOLD"), or nullptr
    const char *description;      // Markdown, one paragraph
};

// The row of s (s < Setting::kCount). Pure; thread-safe.
const SettingInfo &info(Setting s);

// The whole table, in Setting order: *count receives its length. Pure; thread-safe.
const SettingInfo *all_settings(size_t *count);

// The row reached by an hvd_config_key_t, or nullptr when no setting has that key. Pure;
// thread-safe.
const SettingInfo *find_config_key(int32_t key);

// The variable of s: "HVD_<name>" (its Horovod alias, when accepted, is "HOROVOD_<name>").
// Pure; thread-safe.
std::string variable_name(Setting s);

}  // namespace hvd::config
