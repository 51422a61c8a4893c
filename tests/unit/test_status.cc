// SPDX-License-Identifier: Apache-2.0
// The status table: every public status has a name and a message, strerror never returns
// NULL, hvd_last_error behaves like snprintf, and version and feature queries agree with the
// header and the build.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cstring>
#include <string>
#include <thread>

#include "common/error.h"
#include "hvd/hvd.h"

namespace {

struct Expected {
    hvd_status_t status;
    int value;
    const char *name;
};

// Written out by hand from hvd.h: if the table and the header drift apart, this fails.
const Expected kStatuses[] = {
    {HVD_OK, 0, "HVD_OK"},
    {HVD_INPROGRESS, 1, "HVD_INPROGRESS"},
    {HVD_ERR_INVALID_ARG, -1, "HVD_ERR_INVALID_ARG"},
    {HVD_ERR_NO_MEMORY, -2, "HVD_ERR_NO_MEMORY"},
    {HVD_ERR_UNSUPPORTED, -3, "HVD_ERR_UNSUPPORTED"},
    {HVD_ERR_VERSION, -4, "HVD_ERR_VERSION"},
    {HVD_ERR_NOT_READY, -5, "HVD_ERR_NOT_READY"},
    {HVD_ERR_BUSY, -6, "HVD_ERR_BUSY"},
    {HVD_ERR_MISMATCH, -7, "HVD_ERR_MISMATCH"},
    {HVD_ERR_TIMED_OUT, -8, "HVD_ERR_TIMED_OUT"},
    {HVD_ERR_ABORTED, -9, "HVD_ERR_ABORTED"},
    {HVD_ERR_PEER_FAILED, -10, "HVD_ERR_PEER_FAILED"},
    {HVD_ERR_DEVICE, -11, "HVD_ERR_DEVICE"},
    {HVD_ERR_TRANSPORT, -12, "HVD_ERR_TRANSPORT"},
    {HVD_ERR_INTERNAL, -13, "HVD_ERR_INTERNAL"},
};

void test_every_status_named(void **) {
    for (const Expected &e : kStatuses) {
        assert_int_equal(static_cast<int>(e.status), e.value);
        assert_string_equal(hvd_status_name(e.status), e.name);
        const char *msg = hvd_strerror(e.status);
        assert_non_null(msg);
        assert_true(std::strlen(msg) > 0);
        assert_string_not_equal(msg, "unknown status");
    }
}

void test_unknown_status(void **) {
    assert_string_equal(hvd_strerror(static_cast<hvd_status_t>(-999)), "unknown status");
    assert_string_equal(hvd_status_name(static_cast<hvd_status_t>(42)), "HVD_UNKNOWN_STATUS");
}

void test_last_error_is_snprintf_like(void **) {
    hvd::set_last_error("rank 1 has shape [4,3], rank 0 has shape [4,2]");
    size_t need = hvd_last_error(nullptr, 0);
    assert_int_equal(need, std::strlen("rank 1 has shape [4,3], rank 0 has shape [4,2]"));
    char small[7];
    assert_int_equal(hvd_last_error(small, sizeof small), need);
    assert_string_equal(small, "rank 1");
    char big[128];
    hvd_last_error(big, sizeof big);
    assert_string_equal(big, "rank 1 has shape [4,3], rank 0 has shape [4,2]");
}

void test_last_error_is_per_thread(void **) {
    hvd::set_last_error("main thread");
    std::string other;
    std::thread([&] {
        char buf[64];
        hvd_last_error(buf, sizeof buf);
        other = buf;
    }).join();
    assert_string_equal(other.c_str(), "");
}

void test_version(void **) {
    assert_int_equal(hvd_version(), HVD_VERSION_CODE);
    assert_string_equal(hvd_version_string(), HVD_VERSION_STRING);
    // Only what the process really has: UCX, and hwloc's view of this host; CUDA and NCCL
    // only with the GPU module and a device (tests/gpu).
    assert_true((hvd_features() & ~(HVD_FEATURE_CUDA | HVD_FEATURE_NCCL)) ==
                (HVD_FEATURE_UCX | HVD_FEATURE_HWLOC));
    assert_int_equal(HVD_VERSION(1, 2, 3), 10203);
}

void test_init_rejects_other_abi(void **) {
    hvd_context_h ctx = nullptr;
    assert_int_equal(hvd_init_versioned(HVD_ABI_VERSION + 1, HVD_VERSION_CODE, nullptr, &ctx),
                     HVD_ERR_VERSION);
    assert_null(ctx);
    char buf[256];
    hvd_last_error(buf, sizeof buf);
    assert_non_null(std::strstr(buf, "ABI"));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_status_named),
        cmocka_unit_test(test_unknown_status),
        cmocka_unit_test(test_last_error_is_snprintf_like),
        cmocka_unit_test(test_last_error_is_per_thread),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_init_rejects_other_abi),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
