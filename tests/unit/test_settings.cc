// SPDX-License-Identifier: Apache-2.0
// The settings table (config/settings.h) and the reads through it (config/read.h): the table
// is well formed, a setting is read as HVD_<name> or HOROVOD_<name> with its type, default
// and range, a malformed value warns and keeps the default; the run-time settings
// (config/runtime_config.h) take their keys and ranges from the table.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "config/read.h"
#include "config/runtime_config.h"
#include "config/settings.h"
#include "hvd/hvd.h"

using hvd::config::get_bool;
using hvd::config::get_double;
using hvd::config::get_int;
using hvd::config::get_string;
using hvd::config::Setting;
using hvd::config::SettingInfo;
using hvd::config::Type;

namespace {

// Sets HVD_<name> / HOROVOD_<name> for one test and unsets them afterwards.
struct ScopedEnv {
    explicit ScopedEnv(Setting s) : name(hvd::config::info(s).name) { clear(); }
    ~ScopedEnv() { clear(); }
    void hvd(const char *v) const { setenv(("HVD_" + name).c_str(), v, 1); }
    void horovod(const char *v) const { setenv(("HOROVOD_" + name).c_str(), v, 1); }
    void clear() const {
        unsetenv(("HVD_" + name).c_str());
        unsetenv(("HOROVOD_" + name).c_str());
    }
    std::string name;
};

// What fn wrote to stderr.
template <typename Fn>
std::string stderr_of(Fn fn) {
    std::fflush(stderr);
    char path[] = "/tmp/hvd_test_settings_XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(2);
    dup2(fd, 2);
    fn();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string text;
    char buf[512];
    lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
        text.append(buf, static_cast<size_t>(n));
    close(fd);
    unlink(path);
    return text;
}

bool enum_has(const SettingInfo &row, const std::string &value) {
    std::string values = std::string("|") + row.values + "|";
    return values.find("|" + value + "|") != std::string::npos;
}

// Every row: its own id at its index, a unique upper-case name, a description that is a
// sentence, a default of its type inside its range, and a unit the README can name.
void test_table_is_well_formed(void **) {
    size_t n = 0;
    const SettingInfo *rows = hvd::config::all_settings(&n);
    assert_int_equal(n, static_cast<size_t>(Setting::kCount));
    std::set<std::string> names;
    for (size_t i = 0; i < n; ++i) {
        const SettingInfo &r = rows[i];
        assert_int_equal(static_cast<size_t>(r.id), i);
        assert_true(names.insert(r.name).second);
        assert_true(std::strlen(r.name) > 0);
        for (const char *c = r.name; *c; ++c)
            assert_true((*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_');
        size_t len = std::strlen(r.description);
        assert_true(len > 10);
        assert_true(r.description[len - 1] == '.');
        assert_null(std::strchr(r.description, '|'));  // a Markdown table cell
        assert_non_null(r.unit);
        switch (r.type) {
            case Type::kInt:
            case Type::kDouble:
                assert_true(r.min <= r.max);
                assert_true(r.default_number >= r.min && r.default_number <= r.max);
                if (r.type == Type::kInt)
                    assert_true(r.default_number == std::floor(r.default_number));
                assert_null(r.default_string);
                break;
            case Type::kBool:
                assert_true(r.default_number == 0 || r.default_number == 1);
                break;
            case Type::kEnum:
                assert_non_null(r.values);
                if (r.default_string != nullptr) assert_true(enum_has(r, r.default_string));
                break;
            case Type::kString:
                assert_null(r.values);
                break;
        }
        if (r.type != Type::kEnum) assert_null(r.values);
    }
}

// Each hvd_config_key_t has exactly one row, and only rows with such a key have one.
void test_config_keys_have_one_row_each(void **) {
    const int32_t keys[] = {HVD_CONFIG_FUSION_THRESHOLD, HVD_CONFIG_CYCLE_TIME,
                            HVD_CONFIG_STALL_CHECK_TIME, HVD_CONFIG_STALL_SHUTDOWN_TIME,
                            HVD_CONFIG_AUTOTUNE,         HVD_CONFIG_CACHE_CAPACITY};
    size_t n = 0;
    const SettingInfo *rows = hvd::config::all_settings(&n);
    size_t with_key = 0;
    for (size_t i = 0; i < n; ++i) {
        if (rows[i].config_key >= 0) ++with_key;
        assert_true((rows[i].config_key >= 0) == (rows[i].config_key_name != nullptr));
    }
    assert_int_equal(with_key, sizeof keys / sizeof keys[0]);
    for (int32_t key : keys) {
        const SettingInfo *row = hvd::config::find_config_key(key);
        assert_non_null(row);
        assert_int_equal(row->config_key, key);
        assert_true(std::strncmp(row->config_key_name, "HVD_CONFIG_", 11) == 0);
        assert_true(row->type != Type::kString && row->type != Type::kEnum);
    }
    assert_string_equal(hvd::config::find_config_key(HVD_CONFIG_STALL_CHECK_TIME)->config_key_name,
                        "HVD_CONFIG_STALL_CHECK_TIME");
    assert_null(hvd::config::find_config_key(99));
    assert_null(hvd::config::find_config_key(-1));
}

void test_int_from_either_name(void **) {
    ScopedEnv e(Setting::kOpTimeout);
    assert_int_equal(get_int(Setting::kOpTimeout), 1800);
    e.horovod("42");
    assert_int_equal(get_int(Setting::kOpTimeout), 42);
    e.hvd("7");  // HVD_ wins
    assert_int_equal(get_int(Setting::kOpTimeout), 7);
    e.hvd("");  // empty: unset
    assert_int_equal(get_int(Setting::kOpTimeout), 42);
    e.hvd("-9");  // below the range: the bound
    assert_int_equal(get_int(Setting::kOpTimeout), -1);
}

void test_malformed_int_warns_and_keeps_default(void **) {
    ScopedEnv e(Setting::kCacheCapacity);
    e.horovod("12x");
    int64_t v = 0;
    std::string err = stderr_of([&] { v = get_int(Setting::kCacheCapacity); });
    assert_int_equal(v, 1024);
    assert_string_equal(err.c_str(),
                        "[hvd] warning: ignoring HVD_CACHE_CAPACITY=12x (not an integer)\n");
    e.hvd("100000");  // above the range: clamped
    assert_int_equal(get_int(Setting::kCacheCapacity), 65536);
    // The caller's default where it depends on the circumstances.
    ScopedEnv spin(Setting::kSpinUs);
    assert_int_equal(get_int(Setting::kSpinUs, 200), 200);
    spin.hvd("nope");
    assert_int_equal(get_int(Setting::kSpinUs, 200), 200);
}

// Sizes whose range starts above 0 fall back to the default, not the bound.
void test_out_of_range_to_default(void **) {
    ScopedEnv e(Setting::kAllreduceRdMaxBytes);
    e.hvd("0");
    assert_int_equal(get_int(Setting::kAllreduceRdMaxBytes), 262144);
    e.hvd("-5");
    assert_int_equal(get_int(Setting::kAllreduceRdMaxBytes), 262144);
    e.hvd("4096");
    assert_int_equal(get_int(Setting::kAllreduceRdMaxBytes), 4096);
    ScopedEnv slot(Setting::kShmSlotBytes);
    slot.horovod("-1");
    assert_int_equal(get_int(Setting::kShmSlotBytes), 1048576);
}

void test_double(void **) {
    ScopedEnv e(Setting::kCycleTime);
    assert_true(get_double(Setting::kCycleTime) == 0.0);
    e.horovod("2.5");
    assert_true(get_double(Setting::kCycleTime) == 2.5);
    e.hvd("-3");
    assert_true(get_double(Setting::kCycleTime) == 0.0);
    e.hvd("nan");
    assert_true(get_double(Setting::kCycleTime) == 0.0);
    double v = 1;
    std::string err = stderr_of([&] {
        e.hvd("fast");
        v = get_double(Setting::kCycleTime);
    });
    assert_true(v == 0.0);
    assert_string_equal(err.c_str(),
                        "[hvd] warning: ignoring HVD_CYCLE_TIME=fast (not a number)\n");
}

void test_bool(void **) {
    ScopedEnv e(Setting::kShm);
    assert_true(get_bool(Setting::kShm));
    e.horovod("off");
    assert_false(get_bool(Setting::kShm));
    e.hvd("YES");
    assert_true(get_bool(Setting::kShm));
    e.hvd("0");
    assert_false(get_bool(Setting::kShm));
    bool v = false;
    std::string err = stderr_of([&] {
        e.hvd("maybe");
        v = get_bool(Setting::kShm);
    });
    assert_true(v);
    assert_string_equal(err.c_str(), "[hvd] warning: ignoring HVD_SHM=maybe (not a boolean)\n");
    ScopedEnv y(Setting::kSpinYield);
    assert_true(get_bool(Setting::kSpinYield, true));
    y.hvd("false");
    assert_false(get_bool(Setting::kSpinYield, true));
}

void test_string_and_enum(void **) {
    ScopedEnv level(Setting::kLogLevel);
    assert_string_equal(get_string(Setting::kLogLevel), "warning");
    level.horovod("debug");
    assert_string_equal(get_string(Setting::kLogLevel), "debug");
    ScopedEnv host(Setting::kHostname);
    assert_null(get_string(Setting::kHostname));
    host.hvd("node7");
    assert_string_equal(get_string(Setting::kHostname), "node7");
    assert_string_equal(hvd::config::variable_name(Setting::kHostname).c_str(), "HVD_HOSTNAME");
}

// From the environment: the table's names and ranges, STALL_CHECK_DISABLE overriding.
void test_runtime_config_from_environment(void **) {
    ScopedEnv fusion(Setting::kFusionThreshold), cycle(Setting::kCycleTime),
        check(Setting::kStallCheckTimeSeconds), disable(Setting::kStallCheckDisable),
        tune(Setting::kAutotune);
    hvd::config::RuntimeConfig d;
    assert_int_equal(d.fusion_threshold_bytes.load(), 128LL << 20);
    assert_int_equal(d.stall_check_s.load(), 60);
    assert_int_equal(d.cache_capacity.load(), 1024);
    fusion.horovod("-1");
    cycle.hvd("1.25");
    check.hvd("30");
    tune.horovod("1");
    hvd::config::RuntimeConfig c = hvd::config::RuntimeConfig::from_environment();
    assert_int_equal(c.fusion_threshold_bytes.load(), 0);
    assert_int_equal(c.cycle_time_us.load(), 1250);
    assert_int_equal(c.stall_check_s.load(), 30);
    assert_int_equal(c.autotune.load(), 1);
    disable.hvd("1");
    assert_int_equal(hvd::config::RuntimeConfig::from_environment().stall_check_s.load(), 0);
}

// hvd_config_set's checks are the table's ranges.
void test_runtime_config_set_and_get(void **) {
    hvd::config::RuntimeConfig c;
    std::string err;
    double v = -1;
    assert_true(c.set(HVD_CONFIG_CACHE_CAPACITY, 65536, &err));
    assert_true(c.get(HVD_CONFIG_CACHE_CAPACITY, &v, &err));
    assert_true(v == 65536);
    assert_false(c.set(HVD_CONFIG_CACHE_CAPACITY, 65537, &err));
    assert_non_null(std::strstr(err.c_str(), "HVD_CACHE_CAPACITY"));
    assert_false(c.set(HVD_CONFIG_STALL_CHECK_TIME, -1, &err));
    assert_false(c.set(HVD_CONFIG_STALL_CHECK_TIME, 86401, &err));
    assert_true(c.set(HVD_CONFIG_STALL_CHECK_TIME, 86400, &err));
    assert_false(c.set(HVD_CONFIG_FUSION_THRESHOLD, INFINITY, &err));
    assert_false(c.set(HVD_CONFIG_AUTOTUNE, 0.5, &err));
    assert_true(c.set(HVD_CONFIG_AUTOTUNE, 1, &err));
    assert_true(c.set(HVD_CONFIG_CYCLE_TIME, 0.5, &err));
    assert_true(c.get(HVD_CONFIG_CYCLE_TIME, &v, &err));
    assert_true(v == 0.5);
    assert_false(c.get(6, &v, &err));
    assert_string_equal(err.c_str(), "unknown configuration key 6");
    assert_false(c.set(-1, 0, &err));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_well_formed),
        cmocka_unit_test(test_config_keys_have_one_row_each),
        cmocka_unit_test(test_int_from_either_name),
        cmocka_unit_test(test_malformed_int_warns_and_keeps_default),
        cmocka_unit_test(test_out_of_range_to_default),
        cmocka_unit_test(test_double),
        cmocka_unit_test(test_bool),
        cmocka_unit_test(test_string_and_enum),
        cmocka_unit_test(test_runtime_config_from_environment),
        cmocka_unit_test(test_runtime_config_set_and_get),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
