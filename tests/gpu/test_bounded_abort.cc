// SPDX-License-Identifier: Apache-2.0
// gpu::abort_within: every communicator is aborted once, a failing abort does not stop the
// others, an abort that blocks until another communicator is aborted (as ncclCommAbort does
// while that one's kernel runs ahead on the stream) does not hold the others, and one that
// blocks for good holds the caller only up to the limit, after which its helper finishes on
// its own. The module table below aborts scripted handles; no GPU.
#include <cmocka.h>
#include <algorithm>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "gpu/bounded_abort.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Script {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<void *> aborted;  // in call order
    void *blocking = nullptr;     // its abort waits until released, or waits_for is aborted
    bool released = false;
    void *waits_for = nullptr;
    void *failing = nullptr;  // its abort reports an error
};
Script g;

int fake_abort(void *comm, hvd_gpu_err_t *err) {
    std::unique_lock<std::mutex> lock(g.mu);
    if (comm == g.blocking)
        g.cv.wait(lock, [] {
            return g.released || (g.waits_for != nullptr &&
                                  std::count(g.aborted.begin(), g.aborted.end(), g.waits_for));
        });
    g.aborted.push_back(comm);
    g.cv.notify_all();
    if (comm == g.failing) {
        std::strncpy(err->text, "ncclCommAbort: unhandled system error", sizeof err->text - 1);
        return 1;
    }
    return 0;
}

hvd_gpu_module_t make_table() {
    hvd_gpu_module_t t;
    std::memset(&t, 0, sizeof t);
    t.nccl_comm_abort = fake_abort;
    return t;
}
const hvd_gpu_module_t kTable = make_table();

char handles[4];
void *comm(int i) {
    return &handles[i];
}

void reset() {
    std::lock_guard<std::mutex> lock(g.mu);
    g.aborted.clear();
    g.blocking = g.failing = g.waits_for = nullptr;
    g.released = false;
}

// The communicators aborted so far, in handle order.
std::vector<void *> aborted_sorted() {
    std::vector<void *> a = g.aborted;
    std::sort(a.begin(), a.end());
    return a;
}

void test_all_aborted_once(void **) {
    reset();
    g.failing = comm(1);
    assert_true(
        hvd::gpu::abort_within(&kTable, {comm(0), comm(1), comm(2)}, milliseconds(5000), 3));
    std::lock_guard<std::mutex> lock(g.mu);
    assert_true((aborted_sorted() == std::vector<void *>{comm(0), comm(1), comm(2)}));
    assert_true(hvd::gpu::abort_within(&kTable, {}, milliseconds(0), 3));
    assert_int_equal(g.aborted.size(), 3);
}

// The first communicator's abort ends only once the second's has: aborted one after the
// other, in the order given, they would never end.
void test_abort_waiting_for_another(void **) {
    reset();
    g.blocking = comm(0);
    g.waits_for = comm(1);
    assert_true(hvd::gpu::abort_within(&kTable, {comm(0), comm(1)}, milliseconds(5000), 0));
    std::lock_guard<std::mutex> lock(g.mu);
    assert_true((g.aborted == std::vector<void *>{comm(1), comm(0)}));
}

void test_blocking_abort_bounded(void **) {
    reset();
    g.blocking = comm(1);
    const Clock::time_point start = Clock::now();
    assert_false(
        hvd::gpu::abort_within(&kTable, {comm(0), comm(1), comm(2)}, milliseconds(200), 0));
    const auto waited = Clock::now() - start;
    // It waited for the limit, and not much longer: the blocked abort did not hold it.
    assert_true(waited >= milliseconds(200));
    assert_true(waited < milliseconds(5000));
    std::unique_lock<std::mutex> lock(g.mu);
    assert_true((aborted_sorted() == std::vector<void *>{comm(0), comm(2)}));  // not held
    // Released, its helper ends it by itself.
    g.released = true;
    g.cv.notify_all();
    assert_true(
        g.cv.wait_for(lock, std::chrono::seconds(30), [] { return g.aborted.size() == 3; }));
    assert_true((aborted_sorted() == std::vector<void *>{comm(0), comm(1), comm(2)}));
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_aborted_once),
        cmocka_unit_test(test_abort_waiting_for_another),
        cmocka_unit_test(test_blocking_abort_bounded),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
