// SPDX-License-Identifier: Apache-2.0
// Local/cross placement from host names, against hand-computed layouts.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "topology/host_topology.h"

using hvd::topology::place_rank;

static void test_single_host(void **) {
    std::vector<std::string> hosts(3, "a");
    for (int r = 0; r < 3; ++r) {
        auto p = place_rank(hosts, r);
        assert_int_equal(p.local_rank, r);
        assert_int_equal(p.local_size, 3);
        assert_int_equal(p.cross_rank, 0);
        assert_int_equal(p.cross_size, 1);
    }
}

static void test_two_hosts_blocked(void **) {
    // ranks 0,1 on a; 2,3 on b -> local 0,1,0,1; cross 0,0,1,1; cross size 2.
    std::vector<std::string> hosts = {"a", "a", "b", "b"};
    const int local[] = {0, 1, 0, 1}, cross[] = {0, 0, 1, 1};
    for (int r = 0; r < 4; ++r) {
        auto p = place_rank(hosts, r);
        assert_int_equal(p.local_rank, local[r]);
        assert_int_equal(p.local_size, 2);
        assert_int_equal(p.cross_rank, cross[r]);
        assert_int_equal(p.cross_size, 2);
    }
}

static void test_uneven_interleaved(void **) {
    // a b a a: local 0 0 1 2; local sizes 3 1 3 3; cross groups {0,1} {2} {3}.
    std::vector<std::string> hosts = {"a", "b", "a", "a"};
    const int local[] = {0, 0, 1, 2}, lsize[] = {3, 1, 3, 3};
    const int cross[] = {0, 1, 0, 0}, csize[] = {2, 2, 1, 1};
    for (int r = 0; r < 4; ++r) {
        auto p = place_rank(hosts, r);
        assert_int_equal(p.local_rank, local[r]);
        assert_int_equal(p.local_size, lsize[r]);
        assert_int_equal(p.cross_rank, cross[r]);
        assert_int_equal(p.cross_size, csize[r]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_host),
        cmocka_unit_test(test_two_hosts_blocked),
        cmocka_unit_test(test_uneven_interleaved),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
