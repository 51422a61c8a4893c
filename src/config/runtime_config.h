// SPDX-License-Identifier: Apache-2.0
// The settings of a context that may change while it runs: those rows of config/settings.h
// with an hvd_config_key_t (fusion threshold, cycle time, stall inspector, autotune, cache
// capacity). Read from the environment into process-wide defaults, copied into each context
// at init, and changed through hvd_config_set. Every field is an atomic: the engine thread
// reads while callers write.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace hvd::config {

struct RuntimeConfig {
    std::atomic<int64_t> fusion_threshold_bytes;
    std::atomic<int64_t> cycle_time_us;
    std::atomic<int64_t> stall_check_s;     // 0: inspector off
    std::atomic<int64_t> stall_shutdown_s;  // 0: never
    std::atomic<int32_t> autotune;
    std::atomic<int64_t> cache_capacity;  // entries; rank 0's governs
    // The kinds of collective (a bit per negotiation::OpType) that may run on the hosts'
    // hierarchy where the job has one (collectives/hierarchy.h); rank 0's governs, and
    // autotune switches it. No key: all of them unless autotune turns one off.
    std::atomic<uint32_t> hierarchical_ops;

    // The table's defaults, whatever the environment says.
    RuntimeConfig();
    RuntimeConfig(const RuntimeConfig &other) { copy_from(other); }
    RuntimeConfig &operator=(const RuntimeConfig &other) {
        copy_from(other);
        return *this;
    }
    void copy_from(const RuntimeConfig &other);

    // The settings of the environment (HVD_FUSION_THRESHOLD, ...; see config/read.h for
    // malformed and out-of-range values).
    static RuntimeConfig from_environment();

    // hvd_config_key_t keys as doubles, in the unit of the key's row in the table. Return false
    // and set *err for a key no row has, or a value outside the row's range (a boolean: not 0
    // or 1). Thread-safe.
    bool get(int32_t key, double *value, std::string *err) const;
    bool set(int32_t key, double value, std::string *err);
};

// The defaults new contexts start from: the environment's settings, then whatever
// hvd_config_set(NULL, ...) changed. Thread-safe.
RuntimeConfig &process_config();

}  // namespace hvd::config
