#include "engine/runtime_config.h"

#include <algorithm>
#include <cmath>

#include "common/env.h"
#include "common/error.h"
#include "hvd/hvd.h"

namespace hvd::engine {

namespace {

constexpr int64_t kMaxCacheCapacity = 65536;  // ResponseCache::kMaxBits

RuntimeConfig from_environment() {
    RuntimeConfig c;
    int64_t threshold = env_setting_int("FUSION_THRESHOLD", c.fusion_threshold_bytes.load());
    c.fusion_threshold_bytes = threshold < 0 ? 0 : threshold;
    double cycle_ms = env_setting_double("CYCLE_TIME", 0.0);
    c.cycle_time_us = cycle_ms > 0 ? static_cast<int64_t>(std::llround(cycle_ms * 1000.0)) : 0;
    int64_t check = env_setting_int("STALL_CHECK_TIME_SECONDS", c.stall_check_s.load());
    if (env_setting_bool("STALL_CHECK_DISABLE", false)) check = 0;
    c.stall_check_s = check < 0 ? 0 : check;
    int64_t shutdown = env_setting_int("STALL_SHUTDOWN_TIME_SECONDS", 0);
    c.stall_shutdown_s = shutdown < 0 ? 0 : shutdown;
    c.autotune = env_setting_bool("AUTOTUNE", false) ? 1 : 0;
    int64_t capacity = env_setting_int("CACHE_CAPACITY", c.cache_capacity.load());
    c.cache_capacity = capacity < 0 ? 0 : std::min<int64_t>(capacity, kMaxCacheCapacity);
    return c;
}

// Largest values accepted: a day of cycle time or stall time, 1 TiB of fusion buffer.
constexpr double kMaxSeconds = 86400.0;
constexpr double kMaxFusionBytes = 1099511627776.0;

bool in_range(double v, double hi, std::string *err, const char *what) {
    if (std::isfinite(v) && v >= 0 && v <= hi) return true;
    *err = strprintf("%s must be in [0, %.0f], got %g", what, hi, v);
    return false;
}

}  // namespace

void RuntimeConfig::copy_from(const RuntimeConfig &o) {
    fusion_threshold_bytes = o.fusion_threshold_bytes.load();
    cycle_time_us = o.cycle_time_us.load();
    stall_check_s = o.stall_check_s.load();
    stall_shutdown_s = o.stall_shutdown_s.load();
    autotune = o.autotune.load();
    cache_capacity = o.cache_capacity.load();
}

bool RuntimeConfig::get(int32_t key, double *value, std::string *err) const {
    switch (key) {
        case HVD_CONFIG_FUSION_THRESHOLD:
            *value = static_cast<double>(fusion_threshold_bytes.load());
            return true;
        case HVD_CONFIG_CYCLE_TIME:
            *value = static_cast<double>(cycle_time_us.load()) / 1000.0;
            return true;
        case HVD_CONFIG_STALL_CHECK_TIME:
            *value = static_cast<double>(stall_check_s.load());
            return true;
        case HVD_CONFIG_STALL_SHUTDOWN_TIME:
            *value = static_cast<double>(stall_shutdown_s.load());
            return true;
        case HVD_CONFIG_AUTOTUNE:
            *value = autotune.load();
            return true;
        case HVD_CONFIG_CACHE_CAPACITY:
            *value = static_cast<double>(cache_capacity.load());
            return true;
        default:
            *err = strprintf("unknown configuration key %d", key);
            return false;
    }
}

bool RuntimeConfig::set(int32_t key, double v, std::string *err) {
    switch (key) {
        case HVD_CONFIG_FUSION_THRESHOLD:
            if (!in_range(v, kMaxFusionBytes, err, "the fusion threshold (bytes)")) return false;
            fusion_threshold_bytes = static_cast<int64_t>(v);
            return true;
        case HVD_CONFIG_CYCLE_TIME:
            if (!in_range(v, kMaxSeconds * 1000.0, err, "the cycle time (ms)")) return false;
            cycle_time_us = static_cast<int64_t>(std::llround(v * 1000.0));
            return true;
        case HVD_CONFIG_STALL_CHECK_TIME:
            if (!in_range(v, kMaxSeconds, err, "the stall check time (s)")) return false;
            stall_check_s = static_cast<int64_t>(v);
            return true;
        case HVD_CONFIG_STALL_SHUTDOWN_TIME:
            if (!in_range(v, kMaxSeconds, err, "the stall shutdown time (s)")) return false;
            stall_shutdown_s = static_cast<int64_t>(v);
            return true;
        case HVD_CONFIG_AUTOTUNE:
            if (v != 0 && v != 1) {
                *err = strprintf("autotune must be 0 or 1, got %g", v);
                return false;
            }
            autotune = v != 0 ? 1 : 0;
            return true;
        case HVD_CONFIG_CACHE_CAPACITY:
            if (!in_range(v, static_cast<double>(kMaxCacheCapacity), err,
                          "the response cache capacity (entries)"))
                return false;
            cache_capacity = static_cast<int64_t>(v);
            return true;
        default:
            *err = strprintf("unknown configuration key %d", key);
            return false;
    }
}

RuntimeConfig &process_config() {
    static RuntimeConfig config = from_environment();
    return config;
}

}  // namespace hvd::engine
