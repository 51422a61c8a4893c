// SPDX-License-Identifier: Apache-2.0
// engine::make_request reuses released requests: a reused request is as good as new (every
// field of a fresh one, completion state included), whatever the one before held (outputs,
// members, a parent, an error message); releasing one releases what it held; a weak
// reference to a released request stays expired after its object is reused; requests made
// on one thread and released on another are reused too.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/request.h"
#include "negotiation/response_cache.h"

using hvd::engine::make_request;
using hvd::engine::Request;
using hvd::engine::RequestPtr;
using hvd::engine::TensorRef;
using hvd::negotiation::OpType;

namespace {

void assert_as_new(const Request &r) {
    const Request fresh{};
    assert_true(hvd::engine::same_op(r.meta, fresh.meta));  // every field of the op
    for (const TensorRef *t : {&r.input, &r.output}) {
        assert_null(t->data);
        assert_int_equal(t->dtype, fresh.input.dtype);
        assert_true(t->shape.empty());
        assert_int_equal(t->device_type, fresh.input.device_type);
        assert_int_equal(t->device_id, fresh.input.device_id);
    }
    assert_true(r.deadline.infinite() == fresh.deadline.infinite());
    assert_false(r.traced);
    assert_null(r.in_flight);
    assert_int_equal(r.pending_slot, Request::kNotPending);
    assert_null(r.owned_data.data());
    assert_int_equal(r.owned_data.size(), 0);
    assert_true(r.owned_shape.empty());
    assert_true(r.received_splits.empty());
    assert_true(r.members.empty());
    assert_true(r.parent.expired());
    assert_int_equal(r.value, 0);
    assert_int_equal(r.status(), HVD_INPROGRESS);
    assert_true(r.message().empty());
}

// Fills every field, completes with an error, and grows a member that points back.
void use_fully(const RequestPtr &r) {
    r->meta.name = "a.long.enough.name.to.live.on.the.heap";
    r->meta.set_id = 3;
    r->meta.type = OpType::kAlltoall;
    r->meta.shape = {4, 5};
    r->meta.splits = {1, 2, 3};
    r->meta.group = "group.name.also.on.the.heap";
    r->meta.dtype = HVD_DTYPE_INT8;
    r->meta.device_type = 7;
    r->meta.reduce_op = HVD_OP_MAX;
    r->meta.root = 2;
    r->meta.prescale = 0.5;
    r->meta.postscale = 2.0;
    r->meta.group_size = 4;
    r->meta.out_rows = 9;
    r->meta.in_row = 3;
    static float data[4];
    r->input.data = data;
    r->input.shape = {4, 1, 1, 1, 1, 1, 1, 1};  // more dimensions than a shape holds inline
    r->input.dtype = HVD_DTYPE_FLOAT32;
    r->input.device_id = 1;
    r->output = r->input;
    r->deadline = hvd::Deadline::after_ms(1000);
    r->traced = true;
    r->pending_slot = 7;
    r->owned_data.resize(1 << 20);  // from the buffer pool
    r->owned_shape = {1, 2};
    r->received_splits = {4, 4};
    r->value = 42;
    RequestPtr member = make_request();
    member->parent = r;
    r->members.push_back(member);
    r->complete(HVD_ERR_MISMATCH, "rank 1: shapes differ");
}

void test_reused_request_is_as_new(void **) {
    std::set<Request *> seen;
    for (int round = 0; round < 50; ++round) {
        RequestPtr r = make_request();
        assert_as_new(*r);
        seen.insert(r.get());
        use_fully(r);
        assert_int_equal(r->status(), HVD_ERR_MISMATCH);
    }
    assert_true(seen.size() < 50);  // released ones came back
}

void test_release_lets_go_of_what_it_held(void **) {
    std::weak_ptr<Request> member_ref, parent_ref;
    {
        RequestPtr parent = make_request();
        use_fully(parent);
        member_ref = parent->members.front();
        parent_ref = parent;
        assert_false(member_ref.expired());
    }
    assert_true(member_ref.expired());
    assert_true(parent_ref.expired());
    // The objects are reused by later requests; the old references stay expired.
    std::vector<RequestPtr> later;
    for (int i = 0; i < 8; ++i)
        later.push_back(make_request());
    assert_true(parent_ref.expired() && parent_ref.lock() == nullptr);
    assert_true(member_ref.expired() && member_ref.lock() == nullptr);
}

// A step as the engine runs it: the caller's thread makes the requests, another thread drops
// the last reference, and the caller's next requests are the same objects.
void test_released_on_another_thread(void **) {
    for (int step = 0; step < 20; ++step) {
        std::vector<RequestPtr> made;
        std::set<Request *> addresses;
        for (int i = 0; i < 300; ++i) {
            made.push_back(make_request());
            made.back()->meta.name = "grad." + std::to_string(i) + ".of.a.fairly.long.model";
            addresses.insert(made.back().get());
        }
        std::thread other([&made] { made.clear(); });
        other.join();
        size_t reused = 0;
        std::vector<RequestPtr> again;
        for (int i = 0; i < 300; ++i) {
            again.push_back(make_request());
            assert_as_new(*again.back());
            reused += addresses.count(again.back().get());
        }
        assert_true(reused > 0);
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reused_request_is_as_new),
        cmocka_unit_test(test_release_lets_go_of_what_it_held),
        cmocka_unit_test(test_released_on_another_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
