// SPDX-License-Identifier: Apache-2.0
// engine::PendingOps against a std::set of requests: random adds and takes (each request
// keeps its slot while others move), holds(), iteration, joins per process set, clear();
// taking a request the list does not hold, or adding one twice, is an error, not a corrupt
// list.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <random>
#include <set>
#include <vector>

#include "common/error.h"
#include "engine/pending_ops.h"

using hvd::engine::make_request;
using hvd::engine::PendingOps;
using hvd::engine::Request;
using hvd::engine::RequestPtr;
using hvd::negotiation::OpType;

namespace {

void assert_same(const PendingOps &p, const std::set<Request *> &ref,
                 const std::vector<RequestPtr> &all) {
    assert_int_equal(p.size(), ref.size());
    assert_int_equal(p.empty(), ref.empty());
    std::set<Request *> listed;
    for (const RequestPtr &r : p.all())
        listed.insert(r.get());
    assert_true(listed == ref);
    for (const RequestPtr &r : all)
        assert_int_equal(p.holds(*r), ref.count(r.get()));
}

void test_matches_a_set(void **) {
    std::mt19937 rng(11);
    std::vector<RequestPtr> all;
    for (int i = 0; i < 200; ++i)
        all.push_back(make_request());
    PendingOps p;
    std::set<Request *> ref;
    for (int step = 0; step < 20000; ++step) {
        const RequestPtr &r = all[rng() % all.size()];
        if (ref.count(r.get()) == 0) {
            p.add(r);
            ref.insert(r.get());
        } else {
            long before = r.use_count();
            RequestPtr taken = p.take(*r);
            assert_ptr_equal(taken.get(), r.get());
            assert_int_equal(r.use_count(), before);  // moved out, not copied
            ref.erase(r.get());
        }
        if (step % 500 == 0) assert_same(p, ref, all);
    }
    assert_same(p, ref, all);
    p.clear();
    ref.clear();
    assert_same(p, ref, all);
    for (const RequestPtr &r : all)
        assert_int_equal(r.use_count(), 1);  // the list let go of every request
    p.add(all[0]);                           // usable after clear
    assert_true(p.holds(*all[0]));
}

void test_joins_by_set(void **) {
    PendingOps p;
    RequestPtr a = make_request(), j1 = make_request(), j2 = make_request();
    a->meta.set_id = 1;
    j1->meta.type = OpType::kJoin;
    j1->meta.set_id = 1;
    j2->meta.type = OpType::kJoin;
    j2->meta.set_id = 2;
    p.add(a);
    assert_null(p.join_in(1));
    p.add(j1);
    p.add(j2);
    assert_ptr_equal(p.join_in(1), j1.get());
    assert_ptr_equal(p.join_in(2), j2.get());
    assert_null(p.join_in(0));
    p.take(*j1);
    assert_null(p.join_in(1));
    assert_ptr_equal(p.join_in(2), j2.get());
    p.clear();
    assert_null(p.join_in(2));
}

void test_misuse_is_an_error(void **) {
    PendingOps p;
    RequestPtr a = make_request(), b = make_request();
    p.add(a);
    bool threw = false;
    try {
        p.add(a);
    } catch (const hvd::Error &e) {
        threw = e.status() == HVD_ERR_INTERNAL;
    }
    assert_true(threw);
    threw = false;
    try {
        p.take(*b);
    } catch (const hvd::Error &e) {
        threw = e.status() == HVD_ERR_INTERNAL;
    }
    assert_true(threw);
    assert_int_equal(p.size(), 1);
    assert_true(p.holds(*a));
    assert_false(p.holds(*b));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_a_set),
        cmocka_unit_test(test_joins_by_set),
        cmocka_unit_test(test_misuse_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
