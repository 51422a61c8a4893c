// SPDX-License-Identifier: Apache-2.0
// The in-process loopback transport: its matching, failure and wake-up semantics (those the
// UCX transport has), on 1..4 ranks as threads (the collectives over it:
// test_collectives_over_loopback, test_loopback_subgroups_and_failures). Rank threads only record
// what they saw; every assertion runs on the main thread (cmocka's asserts longjmp, which only the
// main thread may do). Every wait is bounded.
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/error.h"
#include "rank_threads.h"
#include "transport/loopback/loopback_transport.h"

namespace {

using hvd::collectives::Comm;
using hvd::collectives::ScratchBuffer;
using hvd::transport::Channel;
using hvd::transport::Completion;
using hvd::transport::kTagFullMask;
using hvd::transport::kTagSeqMask;
using hvd::transport::kTagSourceMask;
using hvd::transport::LoopbackHub;
using hvd::transport::make_tag;
using hvd::transport::Transport;
using rank_threads::is_unsigned;
using rank_threads::load;
using rank_threads::store;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBoundMs = 10000;  // no wait of a passing test comes near it

uint64_t data_tag(int32_t source, uint32_t seq) {
    return make_tag(Channel::kData, 0, source, seq);
}

int64_t ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// Drives t until c is done or ms pass, sleeping on the event fd when idle; whether c is done.
bool drive(Transport &t, const Completion &c, int64_t ms = kBoundMs) {
    hvd::Deadline d = hvd::Deadline::after_ms(ms);
    while (!c.done) {
        if (t.progress()) continue;
        if (d.expired()) return false;
        if (!t.arm()) continue;
        struct pollfd pfd = {t.event_fd(), POLLIN, 0};
        ::poll(&pfd, 1, static_cast<int>(d.remaining_ms(20)));
    }
    return true;
}

bool readable(int fd, int timeout_ms) {
    struct pollfd pfd = {fd, POLLIN, 0};
    return ::poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN) != 0;
}

void send_str(Transport &t, int32_t peer, uint64_t tag, const std::string &s) {
    Completion c;
    t.isend(peer, tag, s.data(), s.size(), &c);
    assert_true(c.done);
    assert_int_equal(c.status, HVD_OK);
    assert_int_equal(c.length, s.size());
    assert_int_equal(c.peer, peer);
}

// A posted receive with its own buffer.
struct Recv {
    Completion c;
    char buf[64] = {};
    void post(Transport &t, uint64_t tag, uint64_t mask = kTagFullMask) {
        t.irecv(tag, mask, buf, sizeof buf, &c);
    }
    std::string got() const { return std::string(buf, c.length); }
};

void assert_received(const Recv &r, const char *want, int32_t from, uint64_t tag) {
    assert_true(r.c.done);
    assert_int_equal(r.c.status, HVD_OK);
    assert_string_equal(r.got().c_str(), want);
    assert_int_equal(r.c.peer, from);
    assert_true(r.c.sender_tag == tag);
}

// ---------------------------------------------------------------- point to point

void test_send_completes_at_once_receive_in_progress(void **) {
    LoopbackHub hub(2);
    auto ts = hub.make_all();
    assert_int_equal(ts[1]->rank(), 1);
    assert_int_equal(ts[1]->size(), 2);
    send_str(*ts[0], 1, data_tag(0, 1), "hello");
    Recv r;
    r.post(*ts[1], data_tag(0, 1));
    assert_false(r.c.done);  // arrived, but not taken in before progress()
    assert_true(ts[1]->progress());
    assert_received(r, "hello", 0, data_tag(0, 1));
    assert_false(ts[1]->progress());
    // Already taken in: the next receive completes in the call.
    send_str(*ts[0], 1, data_tag(0, 2), "again");
    assert_true(ts[1]->progress());
    Recv r2;
    r2.post(*ts[1], data_tag(0, 2));
    assert_received(r2, "again", 0, data_tag(0, 2));
}

void test_matching_order(void **) {
    LoopbackHub hub(2);
    auto ts = hub.make_all();
    const uint64_t a = data_tag(0, 1), b = data_tag(0, 2);
    // Unexpected messages: a receive takes the earliest arrived one that matches.
    for (const char *s : {"a1", "b1", "a2", "a3"})
        send_str(*ts[0], 1, s[0] == 'a' ? a : b, s);
    assert_true(ts[1]->progress());
    Recv rb, ra[3];
    rb.post(*ts[1], b);
    assert_received(rb, "b1", 0, b);
    for (int i = 0; i < 3; ++i)
        ra[i].post(*ts[1], a);
    assert_received(ra[0], "a1", 0, a);
    assert_received(ra[1], "a2", 0, a);
    assert_received(ra[2], "a3", 0, a);
    // Posted receives: an arriving message takes the earliest posted one that matches.
    Recv p1, p_any, p3;
    p1.post(*ts[1], a);
    p_any.post(*ts[1], 0, 0);  // mask 0: any tag
    p3.post(*ts[1], a);
    send_str(*ts[0], 1, a, "x");
    send_str(*ts[0], 1, b, "y");
    send_str(*ts[0], 1, a, "z");
    assert_true(ts[1]->progress());
    assert_received(p1, "x", 0, a);
    assert_received(p_any, "y", 0, b);
    assert_received(p3, "z", 0, a);
}

void test_masks_and_sources(void **) {
    LoopbackHub hub(3);
    auto ts = hub.make_all();
    auto ctl = [](int32_t src, uint32_t seq) { return make_tag(Channel::kControl, 7, src, seq); };
    send_str(*ts[2], 0, ctl(2, 5), "from2");
    send_str(*ts[1], 0, ctl(1, 5), "from1");
    send_str(*ts[1], 0, ctl(1, 6), "seq6");
    send_str(*ts[1], 0, data_tag(1, 5), "data");
    assert_true(ts[0]->progress());
    // Any source: arrival order, the sender reported.
    Recv any1, any2;
    any1.post(*ts[0], ctl(0, 5), ~kTagSourceMask);
    any2.post(*ts[0], ctl(0, 5), ~kTagSourceMask);
    assert_received(any1, "from2", 2, ctl(2, 5));
    assert_received(any2, "from1", 1, ctl(1, 5));
    // Another channel or sequence does not match a full mask.
    Recv seq5;
    seq5.post(*ts[0], ctl(1, 5));
    assert_false(ts[0]->progress());
    assert_false(seq5.c.done);
    assert_int_equal(seq5.c.peer, 1);  // names its source while posted
    Recv any_seq;
    any_seq.post(*ts[0], ctl(1, 0), kTagFullMask & ~static_cast<uint64_t>(kTagSeqMask));
    assert_received(any_seq, "seq6", 1, ctl(1, 6));
    Recv data;
    data.post(*ts[0], data_tag(1, 5));
    assert_received(data, "data", 1, data_tag(1, 5));
    assert_false(seq5.c.done);
    // Bounded wait for a receive nothing will match, then abort frees it.
    auto t0 = Clock::now();
    assert_false(drive(*ts[0], seq5.c, 50));
    assert_true(ms_since(t0) >= 40);
    ts[0]->abort_all(HVD_ERR_ABORTED);
    assert_true(seq5.c.done);
    assert_int_equal(seq5.c.status, HVD_ERR_ABORTED);
}

void test_try_recv_any(void **) {
    LoopbackHub hub(2);
    auto ts = hub.make_all();
    const uint64_t ctl = make_tag(Channel::kControl, 0, 0, 9);
    std::string payload = "stale";
    Completion c;
    assert_false(ts[1]->try_recv_any(ctl, kTagFullMask, &payload, &c));
    std::string big(100000, '\0');
    for (size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>(i * 7);
    Completion s;
    ts[0]->isend(1, ctl, big.data(), big.size(), &s);
    assert_true(s.done);
    // Like UCX's probe, it sees only what progress() has taken in.
    assert_false(ts[1]->try_recv_any(ctl, kTagFullMask, &payload, &c));
    assert_true(ts[1]->progress());
    assert_false(ts[1]->try_recv_any(data_tag(0, 9), kTagFullMask, &payload, &c));
    assert_true(ts[1]->try_recv_any(ctl, ~kTagSourceMask, &payload, &c));
    assert_true(c.done);
    assert_int_equal(c.status, HVD_OK);
    assert_int_equal(c.length, big.size());
    assert_true(c.sender_tag == ctl);
    assert_int_equal(c.peer, 0);
    assert_true(payload == big);
    assert_false(ts[1]->try_recv_any(ctl, kTagFullMask, &payload, &c));
    // A message a posted receive took is not seen again; an empty one is a whole message.
    Recv r;
    r.post(*ts[1], ctl);
    send_str(*ts[0], 1, ctl, "taken");
    send_str(*ts[0], 1, ctl, "");
    assert_true(ts[1]->progress());
    assert_received(r, "taken", 0, ctl);
    assert_true(ts[1]->try_recv_any(ctl, kTagFullMask, &payload, &c));
    assert_true(payload.empty());
    assert_int_equal(c.length, 0);
    // Nothing after an abort.
    send_str(*ts[0], 1, ctl, "late");
    assert_true(ts[1]->progress());
    ts[1]->abort_all(HVD_ERR_ABORTED);
    assert_false(ts[1]->try_recv_any(ctl, kTagFullMask, &payload, &c));
}

void test_too_long_message(void **) {
    LoopbackHub hub(2);
    auto ts = hub.make_all();
    const uint64_t t = data_tag(0, 3);
    char small[4];
    // Posted before the message arrives.
    Completion r1;
    ts[1]->irecv(t, kTagFullMask, small, sizeof small, &r1);
    send_str(*ts[0], 1, t, "too long");
    send_str(*ts[0], 1, t, "fits");
    assert_true(ts[1]->progress());
    assert_true(r1.done);
    assert_int_equal(r1.status, HVD_ERR_TRANSPORT);
    // The long message was consumed: the next receive gets the next one.
    Completion r2;
    ts[1]->irecv(t, kTagFullMask, small, sizeof small, &r2);
    assert_true(r2.done);
    assert_int_equal(r2.status, HVD_OK);
    assert_int_equal(r2.length, 4);
    assert_memory_equal(small, "fits", 4);
    // Already arrived when the receive is posted.
    send_str(*ts[0], 1, t, "longer");
    assert_true(ts[1]->progress());
    Completion r3;
    ts[1]->irecv(t, kTagFullMask, small, sizeof small, &r3);
    assert_true(r3.done);
    assert_int_equal(r3.status, HVD_ERR_TRANSPORT);
}

void test_empty_messages_and_self(void **) {
    LoopbackHub hub(1);
    auto ts = hub.make_all();
    Completion s, r;
    ts[0]->isend(0, data_tag(0, 1), nullptr, 0, &s);
    assert_true(s.done);
    assert_int_equal(s.status, HVD_OK);
    ts[0]->irecv(data_tag(0, 1), kTagFullMask, nullptr, 0, &r);
    assert_true(drive(*ts[0], r));
    assert_int_equal(r.status, HVD_OK);
    assert_int_equal(r.length, 0);
    assert_int_equal(r.peer, 0);
    send_str(*ts[0], 0, data_tag(0, 2), "self");
    Recv r2;
    r2.post(*ts[0], data_tag(0, 2));
    assert_true(drive(*ts[0], r2.c));
    assert_received(r2, "self", 0, data_tag(0, 2));
}

// ---------------------------------------------------------------- failures

void test_aborted_rank_looks_dead(void **) {
    LoopbackHub hub(3);
    auto ts = hub.make_all();
    Recv from2_a, from2_b, any;
    from2_a.post(*ts[1], data_tag(2, 1));
    from2_b.post(*ts[1], data_tag(2, 1));
    any.post(*ts[1], data_tag(0, 1), ~kTagSourceMask);
    // Rank 2's last message was queued before its death: it is still received.
    send_str(*ts[2], 1, data_tag(2, 1), "last");
    ts[2]->abort_all(HVD_ERR_ABORTED);
    Completion s;
    ts[0]->isend(2, data_tag(0, 1), "x", 1, &s);
    assert_true(s.done);
    assert_int_equal(s.status, HVD_ERR_PEER_FAILED);
    assert_int_equal(s.peer, 2);
    // Rank 1 learns of it in progress().
    assert_true(ts[1]->take_failed_peers().empty());
    assert_true(ts[1]->progress());
    assert_received(from2_a, "last", 2, data_tag(2, 1));
    assert_true(from2_b.c.done);
    assert_int_equal(from2_b.c.status, HVD_ERR_PEER_FAILED);
    assert_false(any.c.done);  // any source: other ranks may still send
    std::vector<int32_t> failed = ts[1]->take_failed_peers();
    assert_int_equal(failed.size(), 1);
    assert_int_equal(failed[0], 2);
    assert_true(ts[1]->take_failed_peers().empty());
    Recv later;
    later.post(*ts[1], data_tag(2, 2));
    assert_true(later.c.done);
    assert_int_equal(later.c.status, HVD_ERR_PEER_FAILED);
    send_str(*ts[0], 1, data_tag(0, 1), "alive");
    assert_true(drive(*ts[1], any.c));
    assert_received(any, "alive", 0, data_tag(0, 1));
    // A destroyed transport looks dead too.
    ts[0].reset();
    assert_true(ts[1]->progress());
    failed = ts[1]->take_failed_peers();
    assert_int_equal(failed.size(), 1);
    assert_int_equal(failed[0], 0);
}

void test_mark_peer_failed(void **) {
    LoopbackHub hub(3);
    auto ts = hub.make_all();
    Recv from1, from2;
    from1.post(*ts[0], data_tag(1, 1));
    from2.post(*ts[0], data_tag(2, 1));
    ts[0]->mark_peer_failed(1);
    ts[0]->mark_peer_failed(1);   // once is enough
    ts[0]->mark_peer_failed(-1);  // ignored
    ts[0]->mark_peer_failed(3);
    assert_true(from1.c.done);
    assert_int_equal(from1.c.status, HVD_ERR_PEER_FAILED);
    assert_false(from2.c.done);
    std::vector<int32_t> failed = ts[0]->take_failed_peers();
    assert_int_equal(failed.size(), 1);
    assert_int_equal(failed[0], 1);
    Completion s;
    ts[0]->isend(1, data_tag(0, 1), "x", 1, &s);
    assert_int_equal(s.status, HVD_ERR_PEER_FAILED);
    ts[0]->isend(7, data_tag(0, 1), "x", 1, &s);  // no such rank
    assert_true(s.done);
    assert_int_equal(s.status, HVD_ERR_PEER_FAILED);
    // Only rank 0's view: rank 1 still talks to rank 2.
    send_str(*ts[1], 2, data_tag(1, 1), "ok");
    Recv r;
    r.post(*ts[2], data_tag(1, 1));
    assert_true(drive(*ts[2], r.c));
    assert_received(r, "ok", 1, data_tag(1, 1));
    assert_true(ts[2]->take_failed_peers().empty());
}

void test_abort_all_completes_everything(void **) {
    LoopbackHub hub(2);
    auto ts = hub.make_all();
    Recv rs[3];
    rs[0].post(*ts[0], data_tag(1, 1));
    rs[1].post(*ts[0], 0, 0);
    rs[2].post(*ts[0], data_tag(1, 2));
    send_str(*ts[1], 0, data_tag(1, 3), "dropped");
    ts[0]->abort_all(HVD_ERR_TIMED_OUT);
    for (Recv &r : rs) {
        assert_true(r.c.done);
        assert_int_equal(r.c.status, HVD_ERR_TIMED_OUT);
    }
    ts[0]->abort_all(HVD_ERR_ABORTED);  // again: harmless, the first status stays
    Completion c;
    ts[0]->isend(1, data_tag(0, 1), "x", 1, &c);
    assert_true(c.done);
    assert_int_equal(c.status, HVD_ERR_TIMED_OUT);
    Recv late;
    late.post(*ts[0], data_tag(1, 3));
    assert_true(late.c.done);
    assert_int_equal(late.c.status, HVD_ERR_TIMED_OUT);
    assert_false(ts[0]->progress());
    // The other rank sees it dead.
    ts[1]->isend(0, data_tag(1, 4), "x", 1, &c);
    assert_int_equal(c.status, HVD_ERR_PEER_FAILED);
    assert_true(ts[1]->progress());
    std::vector<int32_t> failed = ts[1]->take_failed_peers();
    assert_int_equal(failed.size(), 1);
    assert_int_equal(failed[0], 0);
}

// ---------------------------------------------------------------- sleeping

void test_event_fd_wakes_a_sleeper(void **) {
    LoopbackHub hub(3);
    auto ts = hub.make_all();
    Transport &t1 = *ts[1];
    assert_true(t1.arm());
    assert_false(readable(t1.event_fd(), 30));  // nothing pending: a sleep would time out
    std::thread sender([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        Completion c;
        ts[0]->isend(1, data_tag(0, 1), "wake", 4, &c);
    });
    auto t0 = Clock::now();
    bool woke = readable(t1.event_fd(), static_cast<int>(kBoundMs));
    int64_t waited = ms_since(t0);
    sender.join();
    assert_true(woke);
    assert_true(waited < kBoundMs / 2);
    assert_false(t1.arm());  // the message waits for progress()
    assert_true(t1.progress());
    assert_true(t1.arm());
    assert_false(readable(t1.event_fd(), 0));
    // A peer's death wakes it too.
    std::thread killer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        ts[2]->abort_all(HVD_ERR_ABORTED);
    });
    woke = readable(t1.event_fd(), static_cast<int>(kBoundMs));
    killer.join();
    assert_true(woke);
    assert_false(t1.arm());
    assert_true(t1.progress());
    assert_int_equal(t1.take_failed_peers().size(), 1);
    assert_true(t1.arm());
}

void test_wait_all_is_bounded(void **) {
    LoopbackHub hub(3);
    auto ts = hub.make_all();
    // A message from another thread ends the wait (spinning, then sleeping on the fd).
    char buf[8];
    Completion r;
    ts[1]->irecv(data_tag(0, 1), kTagFullMask, buf, sizeof buf, &r);
    std::thread sender([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        Completion c;
        ts[0]->isend(1, data_tag(0, 1), "late", 4, &c);
    });
    Completion *cs[] = {&r};
    hvd_status_t st =
        hvd::transport::wait_all(*ts[1], cs, 1, hvd::Deadline::after_ms(kBoundMs), nullptr);
    sender.join();
    assert_int_equal(st, HVD_OK);
    assert_int_equal(r.length, 4);
    // The deadline ends a wait for a message that never comes; the receive is freed.
    ts[1]->irecv(data_tag(0, 2), kTagFullMask, buf, sizeof buf, &r);
    auto t0 = Clock::now();
    st = hvd::transport::wait_all(*ts[1], cs, 1, hvd::Deadline::after_ms(60), nullptr);
    assert_int_equal(st, HVD_ERR_TIMED_OUT);
    assert_true(ms_since(t0) >= 50 && ms_since(t0) < kBoundMs / 2);
    assert_true(r.done);
    assert_int_equal(r.status, HVD_ERR_TIMED_OUT);
    // So does an abort raised by another thread (rank 1 has aborted: rank 2 waits on 0).
    std::atomic<int32_t> abort_flag{0};
    ts[2]->irecv(data_tag(0, 1), kTagFullMask, buf, sizeof buf, &r);
    std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        abort_flag.store(HVD_ERR_ABORTED);
    });
    st = hvd::transport::wait_all(*ts[2], cs, 1, hvd::Deadline::after_ms(kBoundMs), &abort_flag);
    aborter.join();
    assert_int_equal(st, HVD_ERR_ABORTED);
    assert_int_equal(r.status, HVD_ERR_ABORTED);
}

// ---------------------------------------------------------------- the hub

void test_hub_errors_and_addresses(void **) {
    auto status_of = [](const std::function<void()> &f) {
        try {
            f();
        } catch (const hvd::Error &e) {
            return e.status();
        }
        return HVD_OK;
    };
    assert_int_equal(status_of([] { LoopbackHub h(0); }), HVD_ERR_INVALID_ARG);
    LoopbackHub hub(2);
    assert_int_equal(hub.size(), 2);
    assert_int_equal(status_of([&] { hub.make(2); }), HVD_ERR_INVALID_ARG);
    assert_int_equal(status_of([&] { hub.make(-1); }), HVD_ERR_INVALID_ARG);
    std::unique_ptr<Transport> t0 = hub.make(0);
    assert_int_equal(status_of([&] { hub.make(0); }), HVD_ERR_INVALID_ARG);
    std::unique_ptr<Transport> t1 = hub.make(1);
    std::vector<std::string> addrs = {t0->local_address(), t1->local_address()};
    assert_true(addrs[0] != addrs[1]);
    std::vector<bool> same_host = {true, true};
    assert_int_equal(status_of([&] { t0->connect(addrs, same_host); }), HVD_OK);
    assert_int_equal(status_of([&] { t0->connect({addrs[0]}, {true}); }), HVD_ERR_INTERNAL);
    assert_int_equal(status_of([&] {
                         t0->connect({addrs[0], "loopback:7"}, same_host);
                     }),
                     HVD_ERR_TRANSPORT);
}

// N threads, each sending many messages of varied length to every other rank under one tag
// per sender: each receiver gets every sender's messages in the order sent.
void test_threads_keep_per_sender_order(void **) {
    const int32_t n = 4;
    const int kMsgs = 300;
    LoopbackHub hub(n);
    auto ts = hub.make_all();
    auto payload = [](int32_t from, int32_t to, int i) {
        return std::string(static_cast<size_t>(i % 37), static_cast<char>('a' + i % 26)) +
               std::to_string(from * 100000 + to * 1000 + i);
    };
    std::vector<std::string> errors(n);
    std::vector<std::thread> threads;
    for (int32_t me = 0; me < n; ++me) {
        threads.emplace_back([&, me] {
            Transport &t = *ts[me];
            std::vector<Completion> recvs(static_cast<size_t>(n * kMsgs)), sends(recvs.size());
            std::vector<std::vector<char>> bufs(recvs.size(), std::vector<char>(64));
            std::vector<Completion *> all;
            auto post = [&](int lo, int hi) {  // receives lo..hi-1 from every other rank
                for (int i = lo; i < hi; ++i)
                    for (int32_t from = 0; from < n; ++from) {
                        if (from == me) continue;
                        size_t k = static_cast<size_t>(from * kMsgs + i);
                        t.irecv(data_tag(from, 0), kTagFullMask, bufs[k].data(), 64, &recvs[k]);
                        all.push_back(&recvs[k]);
                    }
            };
            post(0, kMsgs / 2);
            for (int i = 0; i < kMsgs; ++i)
                for (int32_t to = 0; to < n; ++to) {
                    if (to == me) continue;
                    std::string s = payload(me, to, i);
                    Completion &c = sends[static_cast<size_t>(to * kMsgs + i)];
                    t.isend(to, data_tag(me, 0), s.data(), s.size(), &c);
                    all.push_back(&c);
                }
            post(kMsgs / 2, kMsgs);
            hvd_status_t st = hvd::transport::wait_all(t, all.data(), all.size(),
                                                       hvd::Deadline::after_ms(kBoundMs), nullptr);
            if (st != HVD_OK) {
                errors[me] = "wait_all: " + std::to_string(st);
                return;
            }
            for (int32_t from = 0; from < n && errors[me].empty(); ++from)
                for (int i = 0; i < kMsgs && from != me; ++i) {
                    size_t k = static_cast<size_t>(from * kMsgs + i);
                    if (std::string(bufs[k].data(), recvs[k].length) != payload(from, me, i) ||
                        recvs[k].peer != from) {
                        errors[me] = "message " + std::to_string(i) + " from " +
                                     std::to_string(from) + " out of order";
                        break;
                    }
                }
        });
    }
    for (auto &th : threads)
        th.join();
    for (int32_t r = 0; r < n; ++r)
        if (!errors[r].empty()) fail_msg("rank %d: %s", r, errors[r].c_str());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_completes_at_once_receive_in_progress),
        cmocka_unit_test(test_matching_order),
        cmocka_unit_test(test_masks_and_sources),
        cmocka_unit_test(test_try_recv_any),
        cmocka_unit_test(test_too_long_message),
        cmocka_unit_test(test_empty_messages_and_self),
        cmocka_unit_test(test_aborted_rank_looks_dead),
        cmocka_unit_test(test_mark_peer_failed),
        cmocka_unit_test(test_abort_all_completes_everything),
        cmocka_unit_test(test_event_fd_wakes_a_sleeper),
        cmocka_unit_test(test_wait_all_is_bounded),
        cmocka_unit_test(test_hub_errors_and_addresses),
        cmocka_unit_test(test_threads_keep_per_sender_order),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
