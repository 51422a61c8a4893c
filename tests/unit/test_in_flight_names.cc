// SPDX-License-Identifier: Apache-2.0
// engine::InFlightNames: a name is refused while in flight and accepted again after leave();
// process sets are separate; entries stay where they are while the table grows (rehashes)
// and while idle entries are swept; unique names (as auto-named ops have) keep it bounded;
// find() names the request in flight.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string>
#include <vector>

#include "engine/in_flight_names.h"

using hvd::engine::InFlightEntry;
using hvd::engine::InFlightNames;

namespace {

void test_refused_while_in_flight(void **) {
    InFlightNames names;
    InFlightEntry *a = names.enter(0, "grad.w");
    assert_non_null(a);
    assert_true(a->in_flight);
    assert_null(names.enter(0, "grad.w"));
    assert_non_null(names.enter(1, "grad.w"));  // another process set
    assert_non_null(names.enter(0, "grad.b"));
    assert_int_equal(names.in_flight(), 3);
    names.leave(a);
    assert_false(a->in_flight);
    InFlightEntry *again = names.enter(0, "grad.w");
    assert_ptr_equal(again, a);  // the same entry, marked again
    assert_int_equal(names.size(), 3);
    assert_int_equal(names.in_flight(), 3);
}

// Entries in flight keep their address while thousands of others come and go, through the
// rehashes of a growing table and the sweeps of idle entries.
void test_entries_stay_put(void **) {
    InFlightNames names;
    std::vector<InFlightEntry *> held;
    std::vector<std::string> held_names;
    for (int i = 0; i < 50; ++i) {
        held_names.push_back("held." + std::to_string(i));
        held.push_back(names.enter(static_cast<uint16_t>(i % 3), held_names.back()));
        assert_non_null(held.back());
    }
    for (int i = 0; i < 5 * static_cast<int>(InFlightNames::kMinKept); ++i) {
        std::string unique = "allreduce.noname." + std::to_string(i);
        InFlightEntry *e = names.enter(static_cast<uint16_t>(i % 2), unique);
        assert_non_null(e);
        names.leave(e);
        assert_true(names.size() <= 2 * (InFlightNames::kMinKept + names.in_flight()) + 1);
    }
    for (size_t i = 0; i < held.size(); ++i) {
        assert_true(held[i]->in_flight);
        assert_null(names.enter(static_cast<uint16_t>(i % 3), held_names[i]));
        names.leave(held[i]);
        assert_ptr_equal(names.enter(static_cast<uint16_t>(i % 3), held_names[i]), held[i]);
    }
    assert_int_equal(names.in_flight(), held.size());
}

// A training loop: the same names every step, so the table stops growing.
void test_steps_reuse_entries(void **) {
    InFlightNames names;
    std::vector<std::string> params;
    for (int k = 0; k < 300; ++k)
        params.push_back("allreduce.layer" + std::to_string(k) + ".weight");
    std::vector<InFlightEntry *> step(params.size());
    for (int s = 0; s < 20; ++s) {
        for (size_t k = 0; k < params.size(); ++k) {
            step[k] = names.enter(0, params[k]);
            assert_non_null(step[k]);
        }
        for (InFlightEntry *e : step)
            names.leave(e);
        assert_int_equal(names.size(), params.size());
        assert_int_equal(names.in_flight(), 0);
    }
}

// find() names the request of a name in flight, in its own process set, and nothing once the
// op has left.
void test_find_names_the_request(void **) {
    InFlightNames names;
    int a = 0, b = 0;  // stand-ins: the table only keeps the pointer
    InFlightEntry *ea = names.enter(0, "grad.w");
    ea->request = reinterpret_cast<hvd::engine::Request *>(&a);
    InFlightEntry *eb = names.enter(2, "grad.w");
    eb->request = reinterpret_cast<hvd::engine::Request *>(&b);
    assert_ptr_equal(names.find(0, "grad.w"), &a);
    assert_ptr_equal(names.find(2, "grad.w"), &b);
    assert_null(names.find(1, "grad.w"));  // a set with no table
    assert_null(names.find(0, "grad.b"));
    names.leave(ea);
    assert_null(ea->request);
    assert_null(names.find(0, "grad.w"));
    assert_ptr_equal(names.find(2, "grad.w"), &b);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_while_in_flight),
        cmocka_unit_test(test_entries_stay_put),
        cmocka_unit_test(test_steps_reuse_entries),
        cmocka_unit_test(test_find_names_the_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
