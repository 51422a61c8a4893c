// SPDX-License-Identifier: Apache-2.0
// gpu::DeviceWatch's bookkeeping: ops that completed on callers' streams are watched until
// their events complete, in stream order, their events reused; an NCCL error, a CUDA error or
// a passed deadline is reported once, naming the rank and the op; a forgotten communicator is
// no longer asked; the cap per device waits for the oldest op. The table below gives the
// watch a device whose stream the test advances by hand (an event completes once the test
// says the work queued before it has run), which no real GPU allows to script; the GPU
// checks (scripts/gpu_check.sh) run the same code on one.
#include <cmocka.h>

#include <cstring>
#include <map>
#include <string>

#include "assert_contains.h"
#include "gpu/device_watch.h"

namespace {

using hvd::Deadline;
using hvd::gpu::DeviceWatch;
using hvd::gpu::WatchedOp;

// The scripted device: event_record puts an event after the work queued so far; the test
// runs work up to a point with run_until().
struct Script {
    int64_t queued = 0;     // work items queued on the stream
    int64_t completed = 0;  // work items that ran
    std::map<void *, int64_t> ready_at;
    int64_t created = 0, destroyed = 0;
    void *failing_comm = nullptr;  // its status reports an asynchronous error
    bool query_fails = false;
    char slot[4096];  // event handles: addresses inside it
};
Script g;

void set_err(hvd_gpu_err_t *err, const char *text) {
    std::strncpy(err->text, text, sizeof err->text - 1);
    err->text[sizeof err->text - 1] = '\0';
}

int fake_event_create(int32_t, void **event, hvd_gpu_err_t *) {
    *event = &g.slot[g.created++];
    g.ready_at[*event] = -1;
    return 0;
}
int fake_event_destroy(int32_t, void *event, hvd_gpu_err_t *) {
    ++g.destroyed;
    g.ready_at.erase(event);
    return 0;
}
int fake_event_record(int32_t, void *event, void *, hvd_gpu_err_t *) {
    g.ready_at[event] = ++g.queued;
    return 0;
}
int fake_event_query(int32_t, void *event, int32_t *done, hvd_gpu_err_t *err) {
    if (g.query_fails) {
        set_err(err, "cudaEventQuery: an illegal memory access was encountered");
        return 1;
    }
    *done = g.ready_at.at(event) <= g.completed ? 1 : 0;
    return 0;
}
int fake_comm_status(void *comm, int32_t *in_progress, hvd_gpu_err_t *err) {
    *in_progress = 0;
    if (comm != nullptr && comm == g.failing_comm) {
        set_err(err, "ncclCommGetAsyncError: remote process exited or there was a network error");
        return 1;
    }
    return 0;
}

hvd_gpu_module_t make_table() {
    hvd_gpu_module_t t;
    std::memset(&t, 0, sizeof t);
    t.event_create = fake_event_create;
    t.event_destroy = fake_event_destroy;
    t.event_record = fake_event_record;
    t.event_query = fake_event_query;
    t.nccl_comm_status = fake_comm_status;
    return t;
}

hvd_gpu_module_t g_table = make_table();

hvd::gpu::GpuLibrary library() {
    hvd::gpu::GpuLibrary lib;
    lib.api = &g_table;
    lib.info.device_count = 1;
    return lib;
}

int g_comm_a, g_comm_b;  // their addresses stand for two communicators

WatchedOp op(const char *name, void *comm, Deadline deadline = Deadline::after_ms(60000)) {
    return WatchedOp{0, nullptr, comm, deadline, std::string("allreduce '") + name + "'"};
}

void *watch(DeviceWatch &w, WatchedOp o) {
    void *event = nullptr;
    std::string message;
    assert_int_equal(w.watch(std::move(o), nullptr, nullptr, &event, &message), HVD_OK);
    assert_non_null(event);
    return event;
}

int reset(void **) {
    g.queued = g.completed = g.created = g.destroyed = 0;
    g.ready_at.clear();
    g.failing_comm = nullptr;
    g.query_fails = false;
    return 0;
}

void test_ends_in_stream_order_and_reuses_events(void **) {
    hvd::gpu::GpuLibrary lib = library();
    {
        DeviceWatch w(&lib, 3);
        std::string message;
        assert_false(w.busy());
        assert_int_equal(w.check(&message), HVD_OK);
        watch(w, op("a", &g_comm_a));
        watch(w, op("b", &g_comm_a));
        void *c = watch(w, op("c", &g_comm_b));
        assert_int_equal(g.created, 3);
        g.completed = 2;
        assert_int_equal(w.check(&message), HVD_OK);
        assert_true(w.busy());
        // Two events are free again: the next ops take them, no new one is made.
        void *d = watch(w, op("d", nullptr));
        void *e = watch(w, op("e", nullptr));
        assert_int_equal(g.created, 3);
        assert_ptr_not_equal(d, c);
        assert_ptr_not_equal(e, c);
        g.completed = g.queued;
        assert_int_equal(w.check(&message), HVD_OK);
        assert_false(w.busy());
    }
    assert_int_equal(g.destroyed, g.created);
}

void test_nccl_error_is_reported_once(void **) {
    hvd::gpu::GpuLibrary lib = library();
    {
        DeviceWatch w(&lib, 2);
        watch(w, op("a", &g_comm_a));
        watch(w, op("grad.7", &g_comm_b));
        g.completed = 1;  // "a" ended; "grad.7" waits for a peer
        g.failing_comm = &g_comm_b;
        std::string message;
        assert_int_equal(w.check(&message), HVD_ERR_DEVICE);
        assert_contains(message, "rank 2");
        assert_contains(message, "allreduce 'grad.7'");
        assert_contains(message, "caller's stream");
        assert_contains(message, "remote process exited");
        // Nothing is watched any more: the context aborts, nothing is reported twice.
        assert_false(w.busy());
        assert_int_equal(w.check(&message), HVD_OK);
    }
    assert_int_equal(g.destroyed, g.created);
}

void test_forgotten_comm_is_not_asked(void **) {
    hvd::gpu::GpuLibrary lib = library();
    DeviceWatch w(&lib, 0);
    watch(w, op("a", &g_comm_a));
    watch(w, op("b", &g_comm_b));
    g.failing_comm = &g_comm_a;
    w.forget_comm(&g_comm_a);  // aborted: NCCL may no longer be asked about it
    std::string message;
    assert_int_equal(w.check(&message), HVD_OK);
    g.failing_comm = &g_comm_b;
    w.forget_comms();
    assert_int_equal(w.check(&message), HVD_OK);
    assert_true(w.busy());  // still watched by their events
    g.completed = g.queued;
    assert_int_equal(w.check(&message), HVD_OK);
    assert_false(w.busy());
}

void test_passed_deadline_times_out(void **) {
    hvd::gpu::GpuLibrary lib = library();
    DeviceWatch w(&lib, 1);
    watch(w, op("a", &g_comm_a, Deadline::after_ms(60000)));
    watch(w, op("late", &g_comm_a, Deadline::after_ms(0)));
    watch(w, op("never", &g_comm_a, Deadline::never()));
    std::string message;
    assert_int_equal(w.check(&message), HVD_ERR_TIMED_OUT);
    assert_contains(message, "rank 1");
    assert_contains(message, "allreduce 'late'");
    assert_contains(message, "HVD_OP_TIMEOUT");
    assert_false(w.busy());
}

void test_cuda_error_is_reported(void **) {
    hvd::gpu::GpuLibrary lib = library();
    DeviceWatch w(&lib, 0);
    watch(w, op("a", nullptr));
    g.query_fails = true;
    std::string message;
    assert_int_equal(w.check(&message), HVD_ERR_DEVICE);
    assert_contains(message, "allreduce 'a'");
    assert_contains(message, "illegal memory access");
}

void test_cap_waits_for_the_oldest(void **) {
    hvd::gpu::GpuLibrary lib = library();
    DeviceWatch w(&lib, 0);
    for (size_t i = 0; i < DeviceWatch::kMaxPerDevice; ++i)
        watch(w, op("old", nullptr, Deadline::after_ms(50)));
    // The oldest never ends: the next op waits for it until its deadline, and fails.
    void *event = nullptr;
    std::string message;
    assert_int_equal(w.watch(op("new", nullptr), nullptr, nullptr, &event, &message),
                     HVD_ERR_TIMED_OUT);
    assert_null(event);
    assert_contains(message, "allreduce 'old'");
    assert_false(w.busy());
    // Where the oldest has ended, the next op goes straight in.
    for (size_t i = 0; i < DeviceWatch::kMaxPerDevice; ++i)
        watch(w, op("more", nullptr));
    g.completed = g.queued - static_cast<int64_t>(DeviceWatch::kMaxPerDevice) + 1;
    watch(w, op("next", nullptr));
    assert_true(w.busy());
}

void test_an_aborted_context_ends_the_wait_at_the_cap(void **) {
    hvd::gpu::GpuLibrary lib = library();
    DeviceWatch w(&lib, 0);
    for (size_t i = 0; i < DeviceWatch::kMaxPerDevice; ++i)
        watch(w, op("old", nullptr, Deadline::never()));
    std::atomic<int32_t> abort{HVD_ERR_PEER_FAILED};
    void *event = nullptr;
    std::string message;
    assert_int_equal(w.watch(op("new", nullptr), &abort, nullptr, &event, &message),
                     HVD_ERR_PEER_FAILED);
    assert_contains(message, "aborted");
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_ends_in_stream_order_and_reuses_events, reset),
        cmocka_unit_test_setup(test_nccl_error_is_reported_once, reset),
        cmocka_unit_test_setup(test_forgotten_comm_is_not_asked, reset),
        cmocka_unit_test_setup(test_passed_deadline_times_out, reset),
        cmocka_unit_test_setup(test_cuda_error_is_reported, reset),
        cmocka_unit_test_setup(test_cap_waits_for_the_oldest, reset),
        cmocka_unit_test_setup(test_an_aborted_context_ends_the_wait_at_the_cap, reset),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
