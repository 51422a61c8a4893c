// SPDX-License-Identifier: Apache-2.0
// The protocol check at init: each rank's entry under the rendezvous key "host" carries its
// libhvd version and protocol; a job with ranks that speak another protocol fails with a
// message naming them, instead of ranks misreading each other's messages.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <string>
#include <vector>

#include "assert_contains.h"
#include "common/error.h"
#include "hvd/hvd.h"
#include "negotiation/wire_protocol.h"

using namespace hvd;
using namespace hvd::negotiation;

namespace {

// The message of what `fn` throws, or "" when it does not; its status in *status.
template <class F>
std::string thrown(F &&fn, hvd_status_t *status) {
    try {
        fn();
    } catch (const Error &e) {
        *status = e.status();
        return e.what();
    }
    return "";
}

void test_same_protocol_gives_the_hosts(void **) {
    std::vector<std::string> entries = {host_entry("node-a"), host_entry("node-b"),
                                        host_entry("node-a")};
    assert_true(entries[0].find('\n') != std::string::npos);
    std::vector<std::string> hosts = hosts_of_same_protocol(entries, 1);
    assert_int_equal(hosts.size(), 3);
    assert_string_equal(hosts[0].c_str(), "node-a");
    assert_string_equal(hosts[1].c_str(), "node-b");
    assert_string_equal(hosts[2].c_str(), "node-a");
}

void test_other_protocols_are_named(void **) {
    std::string mine = host_entry("node-a");
    std::string newer = "node-c\nlibhvd 9.9.9 protocol " + std::to_string(kWireProtocol + 1);
    // an older libhvd publishes the bare host name; a garbled suffix is not a protocol
    std::vector<std::string> entries = {mine, "node-b", newer, "node-d\ngarbage"};
    hvd_status_t s = HVD_OK;
    std::string what = thrown([&] { hosts_of_same_protocol(entries, 0); }, &s);
    assert_int_equal(s, HVD_ERR_MISMATCH);
    assert_contains(what, std::string("rank 0 runs libhvd ") + HVD_VERSION_STRING);
    assert_contains(what, "rank 1 on node-b runs an older libhvd (protocol 1)");
    assert_contains(what, "rank 2 on node-c runs libhvd 9.9.9 (protocol " +
                              std::to_string(kWireProtocol + 1) + ")");
    assert_contains(what, "rank 3 on node-d runs libhvd unknown");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_protocol_gives_the_hosts),
        cmocka_unit_test(test_other_protocols_are_named),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
