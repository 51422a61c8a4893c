// SPDX-License-Identifier: Apache-2.0
// Reading UCX_TLS: which values leave UCX shared memory between ranks of one host (else the
// transport must be driven while a rank waits on anything else), and the value UCX itself
// read from the environment.
#include <stdlib.h>

#include <string>

#include "transport/ucx/ucx_tls.h"

using hvd::transport::configured_tls;
using hvd::transport::tls_allow_shared_memory;

namespace {

void test_lists_with_shared_memory(void **) {
    for (const char *tls :
         {"all", "sm", "shm", "mm", "posix", "sysv", "xpmem", "tcp,posix", "self,sysv,tcp",
          "tcp,sm:aux", "^tcp", "^cma,knem", "^posix", "^", "rc,ud,shm"})
        if (!tls_allow_shared_memory(tls)) fail_msg("UCX_TLS=%s does allow shared memory", tls);
}

void test_lists_without_shared_memory(void **) {
    for (const char *tls : {"tcp", "tcp,self", "self", "cma", "tcp,cma,knem", "rc,ud", "^sm",
                            "^shm", "^mm", "^posix,sysv", "^sysv,tcp,posix", "", "tcpx"})
        if (tls_allow_shared_memory(tls)) fail_msg("UCX_TLS=%s has no shared memory", tls);
}

std::string read_tls() {
    ucp_config_t *config = nullptr;
    assert_int_equal(ucp_config_read(nullptr, nullptr, &config), UCS_OK);
    std::string tls = configured_tls(config);
    ucp_config_release(config);
    return tls;
}

void test_configured_value_follows_the_environment(void **) {
    assert_int_equal(setenv("UCX_TLS", "tcp,self", 1), 0);
    assert_string_equal(read_tls().c_str(), "tcp,self");
    assert_false(tls_allow_shared_memory(read_tls()));
    assert_int_equal(setenv("UCX_TLS", "^tcp", 1), 0);
    assert_string_equal(read_tls().c_str(), "^tcp");
    assert_true(tls_allow_shared_memory(read_tls()));
    assert_int_equal(unsetenv("UCX_TLS"), 0);
    assert_false(read_tls().empty());
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists_with_shared_memory),
        cmocka_unit_test(test_lists_without_shared_memory),
        cmocka_unit_test(test_configured_value_follows_the_environment),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
