// The in-process loopback transport: its matching, failure and wake-up semantics (those the
// UCX transport has), then the CPU collectives over it on 1..4 ranks as threads, checked
// against references computed here. Rank threads only record what they saw; every assertion
// runs on the main thread (cmocka's asserts longjmp, which only the main thread may do).
// Every wait is bounded.
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

// ---------------------------------------------------------------- collectives over loopback

constexpr int32_t kMaxGroup = 4;  // every collective runs on 1..kMaxGroup ranks
constexpr int64_t kCollectiveDeadlineMs = 30000;

// The ranks of one hub, each with its transport and scratch buffer; rank r is member r.
struct LoopWorld {
    explicit LoopWorld(int32_t n) : hub(n), transports(hub.make_all()) {
        for (int32_t r = 0; r < n; ++r)
            scratch.push_back(std::make_unique<ScratchBuffer>());
    }
    int32_t size() const { return hub.size(); }

    LoopbackHub hub;
    std::vector<std::unique_ptr<Transport>> transports;
    std::vector<std::unique_ptr<ScratchBuffer>> scratch;
    uint32_t next_seq = 1;
};

using Body = std::function<hvd_status_t(int32_t rank, size_t call, Comm &comm)>;

// Runs `calls` collectives on one thread per rank: body(rank, call, comm) with a fresh seq per
// call, the same on every rank. A rank stops at its first failure. Returns each rank's first
// failed status (HVD_OK if none).
std::vector<hvd_status_t> run_collectives(LoopWorld &w, size_t calls, const Body &body,
                                          int64_t deadline_ms = kCollectiveDeadlineMs,
                                          const std::atomic<int32_t> *abort_status = nullptr) {
    uint32_t first_seq = w.next_seq;
    w.next_seq += static_cast<uint32_t>(calls);
    int32_t n = w.size();
    std::vector<hvd_status_t> status(n, HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            for (size_t call = 0; call < calls && status[r] == HVD_OK; ++call) {
                Comm comm;
                comm.transport = w.transports[r].get();
                for (int32_t m = 0; m < n; ++m)
                    comm.members.push_back(m);
                comm.my_index = r;
                comm.set_id = 3;
                comm.seq = first_seq + static_cast<uint32_t>(call);
                comm.deadline = hvd::Deadline::after_ms(deadline_ms);
                comm.abort_status = abort_status;
                comm.scratch = w.scratch[r].get();
                status[r] = body(r, call, comm);
            }
        });
    }
    for (auto &t : threads)
        t.join();
    return status;
}

void assert_all_ok(const std::vector<hvd_status_t> &status) {
    for (size_t r = 0; r < status.size(); ++r)
        if (status[r] != HVD_OK) fail_msg("rank %zu: status %d", r, static_cast<int>(status[r]));
}

constexpr int32_t kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

// Member `member`'s element i: small integers, so every reduction over up to 4 members is
// exact in every dtype (sums within [-12, 12], products of {1, -1, 2}) whatever the order.
int64_t value_of(int32_t member, size_t i, int32_t dtype, int32_t op) {
    int64_t h = static_cast<int64_t>((i * 13 + static_cast<size_t>(member) * 7 + i / 5) % 997);
    if (dtype == HVD_DTYPE_BOOL) return h % 3 != 0;
    switch (op) {
        case HVD_OP_SUM:
            return is_unsigned(dtype) ? h % 4 : h % 7 - 3;
        case HVD_OP_PRODUCT: {
            static const int64_t kSigned[3] = {1, -1, 2};
            return is_unsigned(dtype) ? 1 + h % 2 : kSigned[h % 3];
        }
        default:
            return is_unsigned(dtype) ? h % 21 : h % 21 - 10;  // min, max
    }
}

// The reduction of value_of over members 0..n-1 (bool: sum and max are or, min and product
// are and).
int64_t reduced_value(int32_t n, size_t i, int32_t dtype, int32_t op) {
    int64_t acc = value_of(0, i, dtype, op);
    for (int32_t m = 1; m < n; ++m) {
        int64_t v = value_of(m, i, dtype, op);
        if (dtype == HVD_DTYPE_BOOL)
            acc = op == HVD_OP_SUM || op == HVD_OP_MAX ? (acc || v) : (acc && v);
        else if (op == HVD_OP_SUM)
            acc += v;
        else if (op == HVD_OP_PRODUCT)
            acc *= v;
        else if (op == HVD_OP_MIN)
            acc = v < acc ? v : acc;
        else
            acc = v > acc ? v : acc;
    }
    return acc;
}

std::vector<uint8_t> typed_input(int32_t member, size_t count, int32_t dtype, int32_t op) {
    std::vector<uint8_t> b((count + 1) * hvd::dtype_size(dtype));
    for (size_t i = 0; i < count; ++i)
        store(b.data(), i, dtype, static_cast<double>(value_of(member, i, dtype, op)));
    store(b.data(), count, dtype, 1);  // sentinel: must survive
    return b;
}

// ---- allreduce

enum class Allreduce { kDispatch, kRecursiveDoubling, kRing, kRingTinyChunks };

hvd_status_t run_allreduce(Allreduce algo, Comm &comm, void *buf, size_t count, int32_t dtype,
                           int32_t op) {
    namespace c = hvd::collectives;
    switch (algo) {
        case Allreduce::kDispatch:
            return c::allreduce(comm, buf, count, dtype, op);
        case Allreduce::kRecursiveDoubling:
            return c::allreduce_recursive_doubling(comm, buf, count, dtype, op);
        case Allreduce::kRing:
            return c::allreduce_ring(comm, buf, count, dtype, op);
        case Allreduce::kRingTinyChunks:  // 3..24 elements a chunk: many chunks per segment
            return c::allreduce_ring(comm, buf, count, dtype, op, 24);
    }
    return HVD_ERR_INTERNAL;
}

struct ReduceCase {
    int32_t dtype;
    int32_t op;
    size_t count;
};

void check_allreduce(int32_t n, Allreduce algo, const std::vector<ReduceCase> &cases) {
    LoopWorld w(n);
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);  // [rank][case]
    for (int32_t r = 0; r < n; ++r)
        for (const ReduceCase &c : cases)
            bufs[r].push_back(typed_input(r, c.count, c.dtype, c.op));
    assert_all_ok(run_collectives(w, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        const ReduceCase &c = cases[k];
        return run_allreduce(algo, comm, bufs[r][k].data(), c.count, c.dtype, c.op);
    }));
    for (size_t k = 0; k < cases.size(); ++k) {
        const ReduceCase &c = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            for (size_t i = 0; i < c.count; ++i) {
                double got = load(bufs[r][k].data(), i, c.dtype);
                double want = static_cast<double>(reduced_value(n, i, c.dtype, c.op));
                if (got != want)
                    fail_msg("n=%d algo=%d %s %s count=%zu rank %d element %zu: got %g, want %g", n,
                             static_cast<int>(algo), hvd::dtype_name(c.dtype),
                             hvd::reduce_op_name(c.op), c.count, r, i, got, want);
            }
            assert_true(load(bufs[r][k].data(), c.count, c.dtype) == 1.0);
        }
    }
}

void test_allreduce_over_loopback(void **) {
    std::vector<ReduceCase> cases;
    for (int32_t dtype = 0; dtype < hvd::kNumDtypes; ++dtype)
        for (int32_t op : kOps)
            for (size_t count : {0, 1, 5, 1000})
                cases.push_back({dtype, op, count});
    const size_t kLarge = 100003;  // above the dispatch threshold, uneven ring segments
    std::vector<ReduceCase> large = {{HVD_DTYPE_FLOAT32, HVD_OP_SUM, kLarge},
                                     {HVD_DTYPE_INT64, HVD_OP_MAX, kLarge},
                                     {HVD_DTYPE_FLOAT16, HVD_OP_SUM, kLarge},
                                     {HVD_DTYPE_BFLOAT16, HVD_OP_PRODUCT, kLarge}};
    for (int32_t n = 1; n <= kMaxGroup; ++n)
        for (Allreduce algo : {Allreduce::kDispatch, Allreduce::kRecursiveDoubling,
                               Allreduce::kRing, Allreduce::kRingTinyChunks}) {
            check_allreduce(n, algo, cases);
            if (algo != Allreduce::kRingTinyChunks) check_allreduce(n, algo, large);
        }
}

// Random floats: the result depends on the order of the additions, so every rank must have
// used the same one (bitwise identical) and be close to a float64 reference.
void test_allreduce_random_floats_identical_on_every_rank(void **) {
    for (int32_t n = 2; n <= kMaxGroup; ++n)
        for (Allreduce algo : {Allreduce::kRecursiveDoubling, Allreduce::kRing}) {
            const size_t count = 4099;
            LoopWorld w(n);
            std::mt19937 rng(99 + n);
            std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
            std::vector<std::vector<float>> bufs(n, std::vector<float>(count));
            std::vector<double> want(count, 0.0);
            for (int32_t r = 0; r < n; ++r)
                for (size_t i = 0; i < count; ++i) {
                    bufs[r][i] = dist(rng);
                    want[i] += bufs[r][i];
                }
            assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
                return run_allreduce(algo, comm, bufs[r].data(), count, HVD_DTYPE_FLOAT32,
                                     HVD_OP_SUM);
            }));
            for (int32_t r = 1; r < n; ++r)
                assert_memory_equal(bufs[0].data(), bufs[r].data(), count * sizeof(float));
            for (size_t i = 0; i < count; ++i)
                if (std::fabs(bufs[0][i] - want[i]) > 1e-5 * n)
                    fail_msg("n=%d element %zu: got %g, want about %g", n, i, bufs[0][i], want[i]);
        }
}

// ---- allgatherv

uint8_t block_byte(int32_t member, size_t j) {
    return static_cast<uint8_t>(member * 29 + j * 5 + 3);
}

void check_allgatherv(int32_t n, const std::vector<size_t> &bytes, bool in_place) {
    LoopWorld w(n);
    std::vector<size_t> offset(n + 1, 0);
    for (int32_t r = 0; r < n; ++r)
        offset[r + 1] = offset[r] + bytes[r];
    std::vector<std::vector<uint8_t>> in(n), out(n, std::vector<uint8_t>(offset[n] + 1, 0xee));
    for (int32_t r = 0; r < n; ++r) {
        in[r].resize(bytes[r]);
        uint8_t *dst = in_place ? out[r].data() + offset[r] : in[r].data();
        for (size_t j = 0; j < bytes[r]; ++j)
            dst[j] = block_byte(r, j);
    }
    assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
        const void *src = in_place ? out[r].data() + offset[r] : in[r].data();
        return hvd::collectives::allgatherv(comm, src, out[r].data(), bytes);
    }));
    for (int32_t r = 0; r < n; ++r) {
        for (int32_t from = 0; from < n; ++from)
            for (size_t j = 0; j < bytes[from]; ++j)
                if (out[r][offset[from] + j] != block_byte(from, j))
                    fail_msg("n=%d rank %d: byte %zu of member %d's block wrong", n, r, j, from);
        assert_int_equal(out[r][offset[n]], 0xee);
    }
}

void test_allgatherv_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n) {
        std::vector<size_t> ragged(n), zeros(n, 0), large(n);
        for (int32_t r = 0; r < n; ++r) {
            ragged[r] = static_cast<size_t>((r * 5 + 2) % 4) * 13;  // some 0
            large[r] = r % 2 == 0 ? 300001 : 7;
        }
        for (bool in_place : {false, true}) {
            check_allgatherv(n, ragged, in_place);
            check_allgatherv(n, zeros, in_place);
            check_allgatherv(n, large, in_place);
        }
    }
}

// ---- broadcast

enum class Bcast { kDispatch, kTree, kChain, kChainSmallChunks };

hvd_status_t run_broadcast(Bcast algo, Comm &comm, void *buf, size_t bytes, int32_t root) {
    namespace c = hvd::collectives;
    switch (algo) {
        case Bcast::kDispatch:
            return c::broadcast(comm, buf, bytes, root);
        case Bcast::kTree:
            return c::broadcast_binomial_tree(comm, buf, bytes, root);
        case Bcast::kChain:
            return c::broadcast_chain(comm, buf, bytes, root);
        case Bcast::kChainSmallChunks:
            return c::broadcast_chain(comm, buf, bytes, root, 333);
    }
    return HVD_ERR_INTERNAL;
}

// One call per root; every member ends with the root's bytes.
void check_broadcast(int32_t n, Bcast algo, size_t bytes) {
    LoopWorld w(n);
    auto byte_of = [](int32_t root, size_t j) { return static_cast<uint8_t>(root * 41 + j * 3); };
    std::vector<std::vector<std::vector<uint8_t>>> bufs(n);  // [root][rank]
    for (int32_t root = 0; root < n; ++root)
        for (int32_t r = 0; r < n; ++r) {
            std::vector<uint8_t> b(bytes + 1, 0x5a);
            if (r == root)
                for (size_t j = 0; j < bytes; ++j)
                    b[j] = byte_of(root, j);
            bufs[root].push_back(std::move(b));
        }
    assert_all_ok(
        run_collectives(w, static_cast<size_t>(n), [&](int32_t r, size_t root, Comm &comm) {
            return run_broadcast(algo, comm, bufs[root][r].data(), bytes,
                                 static_cast<int32_t>(root));
        }));
    for (int32_t root = 0; root < n; ++root)
        for (int32_t r = 0; r < n; ++r) {
            for (size_t j = 0; j < bytes; ++j)
                if (bufs[root][r][j] != byte_of(root, j))
                    fail_msg("n=%d algo=%d root %d bytes=%zu rank %d: byte %zu wrong", n,
                             static_cast<int>(algo), root, bytes, r, j);
            assert_int_equal(bufs[root][r][bytes], 0x5a);
        }
}

void test_broadcast_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n)
        for (Bcast algo : {Bcast::kDispatch, Bcast::kTree, Bcast::kChain, Bcast::kChainSmallChunks})
            for (size_t bytes : {0, 1, 1000, 100001})
                check_broadcast(n, algo, bytes);
}

// ---- alltoallv

uint8_t a2a_byte(int32_t from, int32_t to, size_t j) {
    return static_cast<uint8_t>(from * 53 + to * 17 + j * 7 + 2);
}

// sizes[i][j]: bytes member i sends member j.
void check_alltoallv(const std::vector<std::vector<size_t>> &sizes) {
    int32_t n = static_cast<int32_t>(sizes.size());
    LoopWorld w(n);
    std::vector<std::vector<size_t>> recv_sizes(n, std::vector<size_t>(n));
    std::vector<std::vector<uint8_t>> in(n), out(n);
    for (int32_t i = 0; i < n; ++i)
        for (int32_t j = 0; j < n; ++j) {
            recv_sizes[j][i] = sizes[i][j];
            for (size_t k = 0; k < sizes[i][j]; ++k)
                in[i].push_back(a2a_byte(i, j, k));
        }
    for (int32_t j = 0; j < n; ++j) {
        size_t total = 0;
        for (size_t b : recv_sizes[j])
            total += b;
        out[j].assign(total + 1, 0xee);
    }
    assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
        return hvd::collectives::alltoallv(comm, in[r].data(), sizes[r], out[r].data(),
                                           recv_sizes[r]);
    }));
    for (int32_t j = 0; j < n; ++j) {
        size_t pos = 0;
        for (int32_t i = 0; i < n; ++i)
            for (size_t k = 0; k < sizes[i][j]; ++k, ++pos)
                if (out[j][pos] != a2a_byte(i, j, k))
                    fail_msg("n=%d member %d: byte %zu of the block from %d wrong", n, j, k, i);
        assert_int_equal(out[j][pos], 0xee);
    }
}

void test_alltoallv_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n) {
        std::vector<std::vector<size_t>> uneven(n, std::vector<size_t>(n)), zeros = uneven,
                                                                            large = uneven;
        for (int32_t i = 0; i < n; ++i)
            for (int32_t j = 0; j < n; ++j) {
                uneven[i][j] = static_cast<size_t>((i * 3 + j * 5 + 1) % 4) * 19;  // some 0
                large[i][j] = (i + j) % 2 == 0 ? 200003 : 1;
            }
        check_alltoallv(uneven);
        check_alltoallv(zeros);
        check_alltoallv(large);
    }
}

// ---- reducescatter

enum class Scatter { kDispatch, kTinyChunks, kInPlace };

struct ScatterCase {
    int32_t dtype;
    int32_t op;
    std::vector<size_t> counts;  // one per member
};

void check_reducescatter(int32_t n, Scatter how, const std::vector<ScatterCase> &cases) {
    LoopWorld w(n);
    std::vector<std::vector<std::vector<uint8_t>>> in(n), out(n);  // [rank][case]
    std::vector<std::vector<size_t>> offset(cases.size(), std::vector<size_t>(n + 1, 0));
    for (size_t k = 0; k < cases.size(); ++k)
        for (int32_t r = 0; r < n; ++r)
            offset[k][r + 1] = offset[k][r] + cases[k].counts[r];
    for (int32_t r = 0; r < n; ++r)
        for (size_t k = 0; k < cases.size(); ++k) {
            const ScatterCase &c = cases[k];
            in[r].push_back(typed_input(r, offset[k][n], c.dtype, c.op));
            std::vector<uint8_t> o((c.counts[r] + 1) * hvd::dtype_size(c.dtype));
            store(o.data(), c.counts[r], c.dtype, 1);  // sentinel
            out[r].push_back(std::move(o));
        }
    auto result = [&](int32_t r, size_t k) {
        return how == Scatter::kInPlace
                   ? in[r][k].data() + offset[k][r] * hvd::dtype_size(cases[k].dtype)
                   : out[r][k].data();
    };
    assert_all_ok(run_collectives(w, cases.size(), [&](int32_t r, size_t k, Comm &comm) {
        namespace c = hvd::collectives;
        const ScatterCase &sc = cases[k];
        if (how == Scatter::kDispatch)
            return c::reducescatter(comm, in[r][k].data(), result(r, k), sc.counts, sc.dtype,
                                    sc.op);
        size_t chunk = how == Scatter::kTinyChunks ? 24 : 40;
        return c::reducescatter_ring(comm, in[r][k].data(), result(r, k), sc.counts, sc.dtype,
                                     sc.op, chunk);
    }));
    for (size_t k = 0; k < cases.size(); ++k) {
        const ScatterCase &c = cases[k];
        for (int32_t r = 0; r < n; ++r) {
            for (size_t j = 0; j < c.counts[r]; ++j) {
                double got = load(result(r, k), j, c.dtype);
                double want =
                    static_cast<double>(reduced_value(n, offset[k][r] + j, c.dtype, c.op));
                if (got != want)
                    fail_msg("n=%d how=%d %s %s member %d element %zu of %zu: got %g, want %g", n,
                             static_cast<int>(how), hvd::dtype_name(c.dtype),
                             hvd::reduce_op_name(c.op), r, j, c.counts[r], got, want);
            }
            if (how != Scatter::kInPlace)
                assert_true(load(out[r][k].data(), c.counts[r], c.dtype) == 1.0);
        }
    }
}

void test_reducescatter_over_loopback(void **) {
    for (int32_t n = 1; n <= kMaxGroup; ++n) {
        std::vector<size_t> uneven(n), even(n, 3), large(n);
        for (int32_t r = 0; r < n; ++r) {
            uneven[r] = static_cast<size_t>((r * 7 + 3) % 5) * 4;  // some 0
            large[r] = 20000 + static_cast<size_t>(r) * 1001;
        }
        std::vector<ScatterCase> cases;
        for (int32_t dtype = 0; dtype < hvd::kNumDtypes; ++dtype)
            for (int32_t op : kOps) {
                cases.push_back({dtype, op, uneven});
                cases.push_back({dtype, op, even});
            }
        for (Scatter how : {Scatter::kDispatch, Scatter::kTinyChunks, Scatter::kInPlace})
            check_reducescatter(n, how, cases);
        check_reducescatter(n, Scatter::kDispatch,
                            {{HVD_DTYPE_FLOAT32, HVD_OP_SUM, large},
                             {HVD_DTYPE_INT32, HVD_OP_MIN, large},
                             {HVD_DTYPE_BFLOAT16, HVD_OP_PRODUCT, large}});
    }
}

// ---- adasum

using Vec = std::vector<double>;

// Adasum of members [lo, hi) in float64 by the paper's recursive definition (whole vectors,
// lower half on the left); a squared norm below 1e-8 gives its vector the coefficient 1.
Vec adasum_of(const std::vector<Vec> &v, size_t lo, size_t hi) {
    if (hi - lo == 1) return v[lo];
    Vec a = adasum_of(v, lo, (lo + hi) / 2), b = adasum_of(v, (lo + hi) / 2, hi);
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += a[i] * b[i];
        aa += a[i] * a[i];
        bb += b[i] * b[i];
    }
    double ca = aa < 1e-8 ? 1.0 : 1.0 - ab / (2 * aa), cb = bb < 1e-8 ? 1.0 : 1.0 - ab / (2 * bb);
    Vec out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
        out[i] = ca * a[i] + cb * b[i];
    return out;
}

void check_adasum(int32_t n, int32_t dtype, size_t count) {
    LoopWorld w(n);
    size_t esize = hvd::dtype_size(dtype);
    std::mt19937 rng(5 + n * 31 + static_cast<int>(count));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<Vec> v(n, Vec(count));
    std::vector<std::vector<uint8_t>> bufs(n, std::vector<uint8_t>((count + 1) * esize));
    for (int32_t r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
            store(bufs[r].data(), i, dtype, dist(rng));
            v[r][i] = load(bufs[r].data(), i, dtype);  // as stored (rounded)
        }
        store(bufs[r].data(), count, dtype, 3.0);  // sentinel
    }
    assert_all_ok(run_collectives(w, 1, [&](int32_t r, size_t, Comm &comm) {
        return hvd::collectives::adasum(comm, bufs[r].data(), count, dtype);
    }));
    for (int32_t r = 1; r < n; ++r)
        assert_memory_equal(bufs[0].data(), bufs[r].data(), count * esize);
    Vec want = adasum_of(v, 0, static_cast<size_t>(n));
    double scale = 1e-3;
    for (double x : want)
        scale = std::max(scale, std::fabs(x));
    double tol = (dtype == HVD_DTYPE_FLOAT64   ? 1e-12
                  : dtype == HVD_DTYPE_FLOAT32 ? 1e-5
                  : dtype == HVD_DTYPE_FLOAT16 ? 1e-2
                                               : 4e-2) *
                 scale;
    for (size_t i = 0; i < count; ++i) {
        double got = load(bufs[0].data(), i, dtype);
        if (!(std::fabs(got - want[i]) <= tol))
            fail_msg("n=%d %s count=%zu element %zu: got %.9g, want %.9g", n,
                     hvd::dtype_name(dtype), count, i, got, want[i]);
    }
    for (int32_t r = 0; r < n; ++r)
        assert_true(load(bufs[r].data(), count, dtype) == 3.0);
}

void test_adasum_over_loopback(void **) {
    for (int32_t n : {1, 2, 4})
        for (int32_t dtype :
             {HVD_DTYPE_FLOAT16, HVD_DTYPE_BFLOAT16, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64})
            for (size_t count : {0, 1, 7, 1000})
                check_adasum(n, dtype, count);
    // Not a power of two: refused on every member, without waiting for the others.
    LoopWorld w(3);
    std::vector<std::vector<float>> bufs(3, std::vector<float>(10, 1.0f));
    std::vector<hvd_status_t> st = run_collectives(
        w, 1,
        [&](int32_t r, size_t, Comm &comm) {
            return hvd::collectives::adasum(comm, bufs[r].data(), 10, HVD_DTYPE_FLOAT32);
        },
        2000);
    for (hvd_status_t s : st)
        assert_int_equal(s, HVD_ERR_UNSUPPORTED);
}

// ---- a group that is not the whole hub

// Members {3, 1, 0} of a 4-rank hub (rank 2 stays out): tags carry global ranks, indices
// are group positions.
void test_collectives_on_a_permuted_subgroup(void **) {
    LoopWorld w(4);
    const std::vector<int32_t> members = {3, 1, 0};
    const size_t count = 777;
    std::vector<std::vector<uint8_t>> sums(3), bcast(3, std::vector<uint8_t>(5000, 0));
    for (int32_t m = 0; m < 3; ++m)
        sums[m] = typed_input(m, count, HVD_DTYPE_INT32, HVD_OP_SUM);
    for (size_t j = 0; j < bcast[1].size(); ++j)
        bcast[1][j] = static_cast<uint8_t>(j * 11);
    std::vector<hvd_status_t> st(3, HVD_OK);
    std::vector<std::thread> threads;
    for (int32_t m = 0; m < 3; ++m)
        threads.emplace_back([&, m] {
            Comm comm;
            comm.transport = w.transports[members[m]].get();
            comm.members = members;
            comm.my_index = m;
            comm.set_id = 9;
            comm.scratch = w.scratch[members[m]].get();
            comm.deadline = hvd::Deadline::after_ms(kCollectiveDeadlineMs);
            namespace c = hvd::collectives;
            for (uint32_t seq : {1u, 2u, 3u}) {
                comm.seq = seq;
                if (seq == 1)
                    st[m] = c::allreduce_recursive_doubling(comm, sums[m].data(), count,
                                                            HVD_DTYPE_INT32, HVD_OP_SUM);
                else if (seq == 2)
                    st[m] = c::allreduce_ring(comm, sums[m].data(), count, HVD_DTYPE_INT32,
                                              HVD_OP_SUM, 64);
                else
                    st[m] = c::broadcast_chain(comm, bcast[m].data(), bcast[m].size(), 1, 700);
                if (st[m] != HVD_OK) return;
            }
        });
    for (auto &t : threads)
        t.join();
    assert_all_ok(st);
    for (int32_t m = 0; m < 3; ++m) {
        for (size_t i = 0; i < count; ++i) {
            // Two sums in a row: the second adds three copies of the first.
            double want =
                3.0 * static_cast<double>(reduced_value(3, i, HVD_DTYPE_INT32, HVD_OP_SUM));
            if (load(sums[m].data(), i, HVD_DTYPE_INT32) != want)
                fail_msg("member %d element %zu wrong", m, i);
        }
        assert_memory_equal(bcast[m].data(), bcast[1].data(), bcast[1].size());
    }
}

// ---- failures end collectives promptly

// Ranks 0 and 1 run a collective that needs rank 2, which aborts instead: both fail with
// HVD_ERR_PEER_FAILED long before their deadline.
void test_collective_fails_when_a_member_aborts(void **) {
    for (int which = 0; which < 4; ++which) {
        LoopWorld w(3);
        std::vector<std::vector<float>> bufs(3, std::vector<float>(3000, 1.0f));
        std::vector<std::vector<size_t>> a2a(3, std::vector<size_t>(3, 400));
        std::vector<std::vector<float>> outs(3, std::vector<float>(300));
        auto t0 = Clock::now();
        std::vector<hvd_status_t> st = run_collectives(
            w, 1,
            [&](int32_t r, size_t, Comm &comm) {
                namespace c = hvd::collectives;
                if (r == 2) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    comm.transport->abort_all(HVD_ERR_ABORTED);
                    return HVD_ERR_ABORTED;
                }
                float *b = bufs[r].data();
                switch (which) {
                    case 0:
                        return c::allreduce_ring(comm, b, 3000, HVD_DTYPE_FLOAT32, HVD_OP_SUM);
                    case 1:
                        return c::allreduce_recursive_doubling(comm, b, 3000, HVD_DTYPE_FLOAT32,
                                                               HVD_OP_SUM);
                    case 2:
                        return c::broadcast_binomial_tree(comm, b, 12000, 2);
                    default:
                        return c::alltoallv(comm, b, a2a[r], outs[r].data(), a2a[r]);
                }
            },
            20000);
        int64_t took = ms_since(t0);
        if (st[0] != HVD_ERR_PEER_FAILED || st[1] != HVD_ERR_PEER_FAILED)
            fail_msg("collective %d: statuses %d %d", which, static_cast<int>(st[0]),
                     static_cast<int>(st[1]));
        assert_true(took < 10000);
    }
}

// The context's abort flag, raised by another thread, ends a collective waiting on a member
// that never comes.
void test_collective_ends_on_abort_flag(void **) {
    LoopWorld w(2);
    std::atomic<int32_t> abort_flag{0};
    std::vector<float> buf(100, 1.0f);
    std::thread raiser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        abort_flag.store(HVD_ERR_ABORTED);
    });
    auto t0 = Clock::now();
    std::vector<hvd_status_t> st = run_collectives(
        w, 1,
        [&](int32_t r, size_t, Comm &comm) {
            if (r == 1) return HVD_OK;  // never joins
            return hvd::collectives::allreduce(comm, buf.data(), 100, HVD_DTYPE_FLOAT32,
                                               HVD_OP_SUM);
        },
        20000, &abort_flag);
    raiser.join();
    assert_int_equal(st[0], HVD_ERR_ABORTED);
    assert_true(ms_since(t0) < 10000);
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
        cmocka_unit_test(test_allreduce_over_loopback),
        cmocka_unit_test(test_allreduce_random_floats_identical_on_every_rank),
        cmocka_unit_test(test_allgatherv_over_loopback),
        cmocka_unit_test(test_broadcast_over_loopback),
        cmocka_unit_test(test_alltoallv_over_loopback),
        cmocka_unit_test(test_reducescatter_over_loopback),
        cmocka_unit_test(test_adasum_over_loopback),
        cmocka_unit_test(test_collectives_on_a_permuted_subgroup),
        cmocka_unit_test(test_collective_fails_when_a_member_aborts),
        cmocka_unit_test(test_collective_ends_on_abort_flag),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
