// SPDX-License-Identifier: Apache-2.0
// Request completion and the pool requests come from, as the engine uses them across threads:
// a request settled (with or without a message) and woken on one thread while another waits
// on it and a third reads its message, many times (a lost wake-up shows as a wait that runs
// to its deadline); a wait after one that timed out; a grouped op's parent completed by its
// members on several threads;
// blocks taken on one thread and freed on another through the threads' own stocks; a thread's
// stock returned to the pool when the thread ends; a pool's kept blocks freed with it.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/request.h"
#include "util/block_pool.h"

using hvd::Deadline;
using hvd::engine::make_request;
using hvd::engine::RequestPtr;
using hvd::util::BlockPool;
using hvd::util::ThreadStock;

namespace {

constexpr int64_t kWaitMs = 5000;

void test_settle_once(void **) {
    RequestPtr r = make_request();
    assert_int_equal(r->status(), HVD_INPROGRESS);
    assert_true(r->settle(HVD_ERR_MISMATCH, "shapes differ"));
    assert_false(r->settle(HVD_OK, ""));
    assert_false(r->settle(HVD_ERR_ABORTED, "late"));
    assert_int_equal(r->status(), HVD_ERR_MISMATCH);
    assert_string_equal(r->message().c_str(), "shapes differ");

    RequestPtr ok = make_request();
    assert_true(ok->settle(HVD_OK, ""));
    assert_false(ok->settle(HVD_ERR_TIMED_OUT, "too late"));
    assert_int_equal(ok->status(), HVD_OK);
    assert_true(ok->message().empty());
    assert_int_equal(ok->wait(Deadline::after_ms(0)), HVD_OK);
}

void test_wait_times_out(void **) {
    RequestPtr r = make_request();
    auto t0 = std::chrono::steady_clock::now();
    assert_int_equal(r->wait(Deadline::after_ms(30)), HVD_INPROGRESS);
    assert_true(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(25));
}

// One thread completes while the other waits; the waiter must return the status long before
// its deadline every time. Both start together from a spin barrier, so that the completion
// often lands while the waiter is entering its wait, and a third thread reads the message as
// soon as it sees the status.
void test_no_lost_wakeup(void **) {
    int late = 0, wrong = 0;
    for (int i = 0; i < 3000; ++i) {
        RequestPtr r = make_request();
        const bool with_message = i % 3 == 0;
        const hvd_status_t expect = with_message ? HVD_ERR_ABORTED : HVD_OK;
        std::atomic<int> ready{0};
        auto together = [&] {
            ready.fetch_add(1);
            while (ready.load() < 3)
                std::this_thread::yield();  // three threads, maybe fewer CPUs
        };
        std::atomic<bool> settled_first{true};
        std::thread completer([&] {
            together();
            for (int spin = 0; spin < i % 50; ++spin)
                std::atomic_signal_fence(std::memory_order_seq_cst);
            if (i % 2 == 0) {
                r->complete(expect, with_message ? "stopped" : "");
            } else {  // as the engine does for a fused run: settle, then wake
                settled_first = r->settle(expect, with_message ? "stopped" : "");
                r->notify();
            }
        });
        std::string seen;
        std::thread reader([&] {
            together();
            const Deadline until = Deadline::after_ms(kWaitMs);  // a lost status: "" below
            while (r->status() == HVD_INPROGRESS && !until.expired())
                std::this_thread::yield();
            seen = r->message();
        });
        together();
        auto t0 = std::chrono::steady_clock::now();
        hvd_status_t s = r->wait(Deadline::after_ms(kWaitMs));
        auto waited = std::chrono::steady_clock::now() - t0;
        completer.join();
        reader.join();
        late += waited >= std::chrono::milliseconds(kWaitMs / 2);
        wrong += s != expect || !settled_first || seen != (with_message ? "stopped" : "");
        if (late + wrong > 0) break;
    }
    assert_int_equal(late, 0);
    assert_int_equal(wrong, 0);
}

// A waiter that gave up (deadline) leaves no trace: a later completion wakes the next one.
void test_wait_after_a_timed_out_wait(void **) {
    RequestPtr r = make_request();
    assert_int_equal(r->wait(Deadline::after_ms(5)), HVD_INPROGRESS);
    std::thread completer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        r->complete(HVD_OK, "");
    });
    auto t0 = std::chrono::steady_clock::now();
    assert_int_equal(r->wait(Deadline::after_ms(kWaitMs)), HVD_OK);
    completer.join();
    assert_true(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(kWaitMs / 2));
}

// A grouped op's parent completes once every member has, with the first error and its
// message, while members finish on several threads at once and a thread waits on the parent.
void test_group_parent(void **) {
    for (int i = 0; i < 300; ++i) {
        RequestPtr parent = make_request();
        constexpr int kMembers = 4;
        for (int m = 0; m < kMembers; ++m)
            parent->members.push_back(make_request());
        const int failing = i % (kMembers + 1);  // kMembers: none fails
        hvd_status_t got = HVD_INPROGRESS;
        std::thread waiter([&] { got = parent->wait(Deadline::after_ms(kWaitMs)); });
        std::vector<std::thread> members;
        for (int m = 0; m < kMembers; ++m)
            members.emplace_back([&, m] {
                const bool fails = m == failing;
                parent->member_done(fails ? HVD_ERR_MISMATCH : HVD_OK, fails ? "member" : "");
            });
        for (auto &t : members)
            t.join();
        waiter.join();
        const hvd_status_t expect = failing < kMembers ? HVD_ERR_MISMATCH : HVD_OK;
        assert_int_equal(got, expect);  // a lost wake-up: HVD_INPROGRESS, after kWaitMs
        assert_int_equal(parent->status(), expect);
        assert_string_equal(parent->message().c_str(), failing < kMembers ? "member" : "");
    }
}

// Several threads wait on one request; one completion wakes them all.
void test_wakes_every_waiter(void **) {
    for (int i = 0; i < 200; ++i) {
        RequestPtr r = make_request();
        std::atomic<int> woke{0};
        std::vector<std::thread> waiters;
        for (int w = 0; w < 3; ++w)
            waiters.emplace_back([&] {
                if (r->wait(Deadline::after_ms(kWaitMs)) == HVD_OK) woke.fetch_add(1);
            });
        r->complete(HVD_OK, "");
        for (auto &t : waiters)
            t.join();
        assert_int_equal(woke.load(), 3);
    }
}

// Blocks made on one thread and freed on another (the caller's and the engine's), through
// their stocks: live blocks never share memory, and freed ones are used again.
void test_pool_across_threads(void **) {
    static BlockPool pool(96, 4096);
    constexpr int kBlocks = 1000;
    std::vector<void *> made(kBlocks);
    std::set<void *> seen;
    for (int round = 0; round < 5; ++round) {
        std::thread maker([&] {
            static thread_local ThreadStock s{};
            for (int i = 0; i < kBlocks; ++i) {
                made[i] = pool.take(s, 96);
                std::memset(made[i], i & 0xff, 96);
            }
            pool.close(s);
        });
        maker.join();
        std::set<void *> live(made.begin(), made.end());
        assert_int_equal(live.size(), kBlocks);
        for (int i = 0; i < kBlocks; ++i) {
            const unsigned char *p = static_cast<const unsigned char *>(made[i]);
            assert_true(std::all_of(p, p + 96, [&](unsigned char c) { return c == (i & 0xff); }));
        }
        size_t reused = 0;
        for (void *p : made)
            reused += seen.count(p);
        if (round > 0) assert_true(reused > kBlocks / 2);
        seen.insert(made.begin(), made.end());
        std::thread freer([&] {
            static thread_local ThreadStock s{};
            for (void *p : made)
                pool.give(s, p, 96);
            pool.close(s);  // as at its thread's exit: the stock goes back to the pool
        });
        freer.join();
    }
    // A block of another size bypasses the stock and the pool.
    ThreadStock other{};
    void *odd = pool.take(other, 40);
    pool.give(other, odd, 40);
    assert_int_equal(other.n, 0);
}

// A pool that goes away frees the blocks it kept (through its discard hook here), not those
// still taken.
std::atomic<int> g_discarded{0};
void count_discard(void *p) noexcept {
    g_discarded.fetch_add(1);
    ::operator delete(p);
}

void test_pool_frees_kept_blocks(void **) {
    g_discarded = 0;
    void *live = nullptr;
    {
        BlockPool pool(64, 16, count_discard);
        ThreadStock s{};
        std::vector<void *> blocks;
        for (int i = 0; i < 10; ++i)
            blocks.push_back(pool.take(s, 64));
        live = pool.take(s, 64);
        for (void *p : blocks)
            pool.give(s, p, 64);
        pool.close(s);  // the stock's 10 blocks go to the pool's list
        assert_int_equal(g_discarded.load(), 0);
    }
    assert_int_equal(g_discarded.load(), 10);
    ::operator delete(live);
}

// A thread that ends gives its stock back: the next thread takes the same blocks.
void test_stock_returned_at_thread_exit(void **) {
    std::vector<hvd::engine::Request *> first;
    std::thread a([&] {
        std::vector<RequestPtr> reqs;
        for (int i = 0; i < 20; ++i)
            reqs.push_back(make_request());
        for (auto &r : reqs)
            first.push_back(r.get());
    });  // the requests are freed into a's stock, which goes back to the pool as a ends
    a.join();
    size_t again = 0;
    std::thread b([&] {
        std::vector<RequestPtr> reqs;
        for (int i = 0; i < 20; ++i)
            reqs.push_back(make_request());
        for (auto &r : reqs)
            again += std::count(first.begin(), first.end(), r.get());
    });
    b.join();
    assert_true(again >= 10);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settle_once),
        cmocka_unit_test(test_wait_times_out),
        cmocka_unit_test(test_no_lost_wakeup),
        cmocka_unit_test(test_wait_after_a_timed_out_wait),
        cmocka_unit_test(test_group_parent),
        cmocka_unit_test(test_wakes_every_waiter),
        cmocka_unit_test(test_pool_across_threads),
        cmocka_unit_test(test_stock_returned_at_thread_exit),
        cmocka_unit_test(test_pool_frees_kept_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
