// SPDX-License-Identifier: Apache-2.0
#include "config/runtime_config.h"

#include <cmath>

#include "common/error.h"
#include "config/read.h"
#include "config/settings.h"

namespace hvd::config {

namespace {

int64_t default_int(Setting s) {
    return static_cast<int64_t>(info(s).default_number);
}

int64_t ms_to_us(double ms) {
    return static_cast<int64_t>(std::llround(ms * 1000.0));
}

// Whether v is a value hvd_config_set accepts for the row; *err says why not.
bool check_value(const SettingInfo &row, double v, std::string *err) {
    if (row.type == Type::kBool) {
        if (v == 0 || v == 1) return true;
        *err = strprintf("HVD_%s must be 0 or 1, got %g", row.name, v);
        return false;
    }
    if (std::isfinite(v) && v >= row.min && v <= row.max) return true;
    *err = strprintf("HVD_%s (%s) must be in [%.0f, %.0f], got %g", row.name, row.unit, row.min,
                     row.max, v);
    return false;
}

}  // namespace

RuntimeConfig::RuntimeConfig()
    : fusion_threshold_bytes(default_int(Setting::kFusionThreshold)),
      cycle_time_us(ms_to_us(info(Setting::kCycleTime).default_number)),
      stall_check_s(default_int(Setting::kStallCheckTimeSeconds)),
      stall_shutdown_s(default_int(Setting::kStallShutdownTimeSeconds)),
      autotune(static_cast<int32_t>(default_int(Setting::kAutotune))),
      cache_capacity(default_int(Setting::kCacheCapacity)),
      hierarchical_ops(~uint32_t{0}) {}

RuntimeConfig RuntimeConfig::from_environment() {
    RuntimeConfig c;
    c.fusion_threshold_bytes = get_int(Setting::kFusionThreshold);
    c.cycle_time_us = ms_to_us(get_double(Setting::kCycleTime));
    const int64_t check = get_int(Setting::kStallCheckTimeSeconds);
    c.stall_check_s = get_bool(Setting::kStallCheckDisable) ? 0 : check;
    c.stall_shutdown_s = get_int(Setting::kStallShutdownTimeSeconds);
    c.autotune = get_bool(Setting::kAutotune) ? 1 : 0;
    c.cache_capacity = get_int(Setting::kCacheCapacity);
    return c;
}

void RuntimeConfig::copy_from(const RuntimeConfig &o) {
    hierarchical_ops = o.hierarchical_ops.load();
    fusion_threshold_bytes = o.fusion_threshold_bytes.load();
    cycle_time_us = o.cycle_time_us.load();
    stall_check_s = o.stall_check_s.load();
    stall_shutdown_s = o.stall_shutdown_s.load();
    autotune = o.autotune.load();
    cache_capacity = o.cache_capacity.load();
}

bool RuntimeConfig::get(int32_t key, double *value, std::string *err) const {
    const SettingInfo *row = find_config_key(key);
    switch (row != nullptr ? row->id : Setting::kCount) {
        case Setting::kFusionThreshold:
            *value = static_cast<double>(fusion_threshold_bytes.load());
            return true;
        case Setting::kCycleTime:
            *value = static_cast<double>(cycle_time_us.load()) / 1000.0;
            return true;
        case Setting::kStallCheckTimeSeconds:
            *value = static_cast<double>(stall_check_s.load());
            return true;
        case Setting::kStallShutdownTimeSeconds:
            *value = static_cast<double>(stall_shutdown_s.load());
            return true;
        case Setting::kAutotune:
            *value = autotune.load();
            return true;
        case Setting::kCacheCapacity:
            *value = static_cast<double>(cache_capacity.load());
            return true;
        default:
            *err = strprintf("unknown configuration key %d", key);
            return false;
    }
}

bool RuntimeConfig::set(int32_t key, double v, std::string *err) {
    const SettingInfo *row = find_config_key(key);
    if (row == nullptr) {
        *err = strprintf("unknown configuration key %d", key);
        return false;
    }
    if (!check_value(*row, v, err)) return false;
    switch (row->id) {
        case Setting::kFusionThreshold:
            fusion_threshold_bytes = static_cast<int64_t>(v);
            return true;
        case Setting::kCycleTime:
            cycle_time_us = ms_to_us(v);
            return true;
        case Setting::kStallCheckTimeSeconds:
            stall_check_s = static_cast<int64_t>(v);
            return true;
        case Setting::kStallShutdownTimeSeconds:
            stall_shutdown_s = static_cast<int64_t>(v);
            return true;
        case Setting::kAutotune:
            autotune = v != 0 ? 1 : 0;
            return true;
        case Setting::kCacheCapacity:
            cache_capacity = static_cast<int64_t>(v);
            return true;
        default:
            *err = strprintf("configuration key %d has no run-time value", key);
            return false;
    }
}

RuntimeConfig &process_config() {
    static RuntimeConfig config = RuntimeConfig::from_environment();
    return config;
}

}  // namespace hvd::config
