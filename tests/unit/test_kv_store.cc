// SPDX-License-Identifier: Apache-2.0
// The rendezvous key-value store over real TCP sockets on the loopback interface: ranks run as
// threads, each with its own KvClient, against one KvServer.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <dirent.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "assert_contains.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/kv_store.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"
#include "kv_test_util.h"

using namespace hvd;
using namespace hvd::bootstrap;
using namespace kvtest;

namespace {

using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// A port nobody listens on right now.
int free_port() {
    Fd probe = listen_tcp(kLoopback, 0);
    return bound_port(probe.get());
}

std::string value_of(int rank) {
    return "value-" + std::to_string(rank * rank + 7);
}

// Each rank: put its own key, read everyone's, then an all_gather with one large value.
std::string rank_body(int port, int32_t rank, int32_t size) {
    KvClient c(kLoopback, port, kSecret, rank, size, Deadline::after_ms(kTimeoutMs));
    c.put("key/" + std::to_string(rank), value_of(rank));
    for (int32_t q = 0; q < size; ++q) {
        std::string got = c.get("key/" + std::to_string(q), Deadline::after_ms(kTimeoutMs));
        if (got != value_of(q)) return "get key/" + std::to_string(q) + " returned " + got;
    }
    std::string mine = rank == 2 ? std::string(200000, 'x') : "r" + std::to_string(rank);
    std::vector<std::string> all = c.all_gather("ag", mine, Deadline::after_ms(kTimeoutMs));
    if (all.size() != static_cast<size_t>(size)) return "all_gather size";
    for (int32_t q = 0; q < size; ++q) {
        std::string want = q == 2 ? std::string(200000, 'x') : "r" + std::to_string(q);
        if (all[q] != want) return "all_gather entry " + std::to_string(q);
    }
    c.bye();
    return "";
}

// Frames survive being cut into single bytes; malformed ones are refused.
void test_frame_decoder(void **) {
    std::string value("bin\0ary", 7);
    std::string stream = encode_frame(KvMsg::kPut, {"k", value}) + encode_frame(KvMsg::kBye, {}) +
                         encode_frame(KvMsg::kGet, {encode_u64(0x0102030405060708ull), "key"});
    FrameDecoder dec(kMaxFrameBytes);
    std::vector<Frame> frames;
    for (char byte : stream) {
        dec.buffer()->push_back(byte);
        Frame f;
        while (dec.next(&f))
            frames.push_back(f);
    }
    assert_int_equal(frames.size(), 3);
    assert_true(frames[0].type == KvMsg::kPut);
    assert_int_equal(frames[0].fields.size(), 2);
    assert_true(frames[0].fields[1] == value);
    assert_true(frames[1].type == KvMsg::kBye);
    assert_int_equal(frames[1].fields.size(), 0);
    assert_true(decode_u64(frames[2].fields[0]) == 0x0102030405060708ull);
    assert_string_equal(frames[2].fields[1].c_str(), "key");

    auto refused = [](const std::string &bytes, size_t limit) {
        FrameDecoder d(limit);
        *d.buffer() = bytes;
        Frame f;
        return catching([&] { d.next(&f); }).status == HVD_ERR_TRANSPORT;
    };
    assert_true(refused(encode_frame(KvMsg::kPut, {std::string(5000, 'v')}), 4096));
    assert_true(refused(std::string("\x06\x00\x00\x00\x05\x09\x00\x00\x00x", 10), 4096));
    assert_true(refused(std::string("\x01\x00\x00\x00\x63", 5), 4096));
    assert_true(refused(std::string("\x00\x00\x00\x00", 4), 4096));
}

void test_four_ranks_put_get_all_gather(void **) {
    constexpr int kRanks = 4;
    KvServer server(kLoopback, 0, kSecret, kRanks, kTimeoutMs);
    assert_true(server.port() > 0);
    std::vector<std::string> errors(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
        threads.emplace_back([&, r] {
            Outcome o = catching([&] { errors[r] = rank_body(server.port(), r, kRanks); });
            if (o.status != HVD_OK) errors[r] = o.message;
        });
    for (auto &t : threads)
        t.join();
    for (int r = 0; r < kRanks; ++r)
        if (!errors[r].empty()) fail_msg("rank %d: %s", r, errors[r].c_str());
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// A missing key times out at the deadline; the late answer to the abandoned GET is ignored.
void test_get_timeout(void **) {
    KvServer server(kLoopback, 0, kSecret, 1, kTimeoutMs);
    auto c = connect_rank(server.port(), 0, 1);
    auto t0 = Clock::now();
    Outcome o = catching([&] { c->get("missing", Deadline::after_ms(200)); });
    int64_t waited = ms_since(t0);
    assert_int_equal(o.status, HVD_ERR_TIMED_OUT);
    assert_contains(o.message, "'missing'");
    assert_true(waited >= 200 && waited < 2000);
    c->put("missing", "late");
    assert_string_equal(c->get("missing", Deadline::after_ms(kTimeoutMs)).c_str(), "late");
    c->put("missing", "replaced");
    assert_string_equal(c->get("missing", Deadline::after_ms(kTimeoutMs)).c_str(), "replaced");
    c->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// Sends raw bytes on a fresh connection and reports whether the server closed it.
bool server_drops_garbage(int port, const std::string &garbage) {
    Fd fd = connect_tcp(kLoopback, port, Deadline::after_ms(kTimeoutMs));
    send_all(fd.get(), garbage, Deadline::after_ms(kTimeoutMs), "garbage");
    std::string buf;
    Deadline deadline = Deadline::after_ms(kTimeoutMs);
    while (!deadline.expired()) {
        if (!wait_readable(fd.get(), deadline, 100)) continue;
        if (read_available(fd.get(), &buf, 1 << 20) == ReadResult::kClosed) return true;
    }
    return false;
}

// Wrong secrets, garbage, bad ranks and duplicates are turned away; the job goes on.
void test_bad_clients_rejected(void **) {
    KvServer server(kLoopback, 0, kSecret, 2, kTimeoutMs);
    Outcome wrong = catching([&] { connect_rank(server.port(), 0, 2, "not-the-secret"); });
    assert_int_equal(wrong.status, HVD_ERR_TRANSPORT);
    assert_contains(wrong.message, "authentication failed");
    assert_true(server_drops_garbage(server.port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert_true(server_drops_garbage(server.port(), std::string("\x05\x00\x00\x00\x42zzzz", 9)));
    Outcome outside = catching([&] { connect_rank(server.port(), 0, 3); });
    assert_int_equal(outside.status, HVD_ERR_TRANSPORT);
    assert_contains(outside.message, "3 ranks");

    auto r0 = connect_rank(server.port(), 0, 2);
    Outcome dup = catching([&] { connect_rank(server.port(), 0, 2); });
    assert_int_equal(dup.status, HVD_ERR_TRANSPORT);
    assert_contains(dup.message, "already joined");
    auto r1 = connect_rank(server.port(), 1, 2);

    std::vector<std::string> got1;
    std::thread t([&] { got1 = r1->all_gather("g", "one", Deadline::after_ms(kTimeoutMs)); });
    std::vector<std::string> got0 = r0->all_gather("g", "zero", Deadline::after_ms(kTimeoutMs));
    t.join();
    for (const auto *got : {&got0, &got1}) {
        assert_int_equal(got->size(), 2);
        assert_string_equal((*got)[0].c_str(), "zero");
        assert_string_equal((*got)[1].c_str(), "one");
    }
    assert_true(r0->poll_failures().empty());
    r0->bye();
    r1->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// A rank that vanishes without BYE is reported to every other rank, and to late joiners.
void test_close_without_bye_reports_failure(void **) {
    KvServer server(kLoopback, 0, kSecret, 4, kTimeoutMs);
    auto r0 = connect_rank(server.port(), 0, 4);
    auto r1 = connect_rank(server.port(), 1, 4);
    auto r2 = connect_rank(server.port(), 2, 4);
    r2.reset();  // dies: no bye
    for (KvClient *c : {r0.get(), r1.get()}) {
        std::vector<int32_t> failed = wait_failures(*c, kTimeoutMs);
        assert_int_equal(failed.size(), 1);
        assert_int_equal(failed[0], 2);
        assert_true(c->poll_failures().empty());  // reported once
    }
    auto r3 = connect_rank(server.port(), 3, 4);
    std::vector<int32_t> late = wait_failures(*r3, kTimeoutMs);
    assert_int_equal(late.size(), 1);
    assert_int_equal(late[0], 2);

    Outcome o = catching([&] { r0->get("anything", Deadline::after_ms(kTimeoutMs)); });
    assert_int_equal(o.status, HVD_ERR_PEER_FAILED);
    assert_contains(o.message, "rank 2 failed");
    r0->bye();
    r1->bye();
    r3->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// A get blocked on a key is woken by the FAILED notice, long before its deadline.
void test_failure_interrupts_get(void **) {
    KvServer server(kLoopback, 0, kSecret, 3, kTimeoutMs);
    auto r0 = connect_rank(server.port(), 0, 3);
    auto r1 = connect_rank(server.port(), 1, 3);
    auto r2 = connect_rank(server.port(), 2, 3);
    Outcome o;
    int64_t waited = 0;
    std::thread waiter([&] {
        auto t0 = Clock::now();
        o = catching([&] { r1->get("never-put", Deadline::after_ms(kTimeoutMs)); });
        waited = ms_since(t0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    r0.reset();
    waiter.join();
    assert_int_equal(o.status, HVD_ERR_PEER_FAILED);
    assert_contains(o.message, "rank 0 failed");
    assert_contains(o.message, "'never-put'");
    assert_true(waited < kTimeoutMs / 2);
    r1->bye();
    r2->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// The server going away is kServerLost, reported once; the client is closed afterwards.
void test_server_stop_reports_lost(void **) {
    auto server = std::make_unique<KvServer>(kLoopback, 0, kSecret, 2, kTimeoutMs);
    auto r0 = connect_rank(server->port(), 0, 2);
    auto r1 = connect_rank(server->port(), 1, 2);
    server.reset();
    for (KvClient *c : {r0.get(), r1.get()}) {
        std::vector<int32_t> failed = wait_failures(*c, kTimeoutMs);
        assert_int_equal(failed.size(), 1);
        assert_int_equal(failed[0], KvClient::kServerLost);
        assert_int_equal(c->fd(), -1);
        assert_true(c->poll_failures().empty());
    }
    Outcome o = catching([&] { r0->get("k", Deadline::after_ms(kTimeoutMs)); });
    assert_int_equal(o.status, HVD_ERR_PEER_FAILED);
    Outcome p = catching([&] { r1->put("k", "v"); });
    assert_int_equal(p.status, HVD_ERR_PEER_FAILED);
    r0->bye();  // harmless after the loss
}

void test_server_finishes_after_all_bye(void **) {
    KvServer server("", 0, kSecret, 2, kTimeoutMs);
    auto r0 = connect_rank(server.port(), 0, 2);
    auto r1 = connect_rank(server.port(), 1, 2);
    r0->bye();
    assert_false(server.wait_finished(Deadline::after_ms(200)));  // rank 1 is still there
    assert_int_equal(r0->fd(), -1);
    Outcome o = catching([&] { r0->put("k", "v"); });
    assert_int_equal(o.status, HVD_ERR_NOT_READY);
    r1->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
    assert_true(server.finished());
    assert_true(r1->poll_failures().empty());  // a clean end is not a failure
}

void test_server_idle_timeout(void **) {
    auto t0 = Clock::now();
    KvServer server(kLoopback, 0, kSecret, 2, 150);
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
    int64_t waited = ms_since(t0);
    assert_true(waited >= 150 && waited < kTimeoutMs);
}

// The client starts first and keeps retrying until the server is up.
void test_client_before_server(void **) {
    int port = free_port();
    Outcome o;
    std::string got;
    std::thread client([&] {
        o = catching([&] {
            KvClient c(kLoopback, port, kSecret, 0, 1, Deadline::after_ms(kTimeoutMs));
            c.put("early", "bird");
            got = c.get("early", Deadline::after_ms(kTimeoutMs));
            c.bye();
        });
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    KvServer server(kLoopback, port, kSecret, 1, kTimeoutMs);
    client.join();
    if (o.status != HVD_OK) fail_msg("client: %s", o.message.c_str());
    assert_string_equal(got.c_str(), "bird");
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

void test_connect_timeout(void **) {
    int port = free_port();
    auto t0 = Clock::now();
    Outcome o =
        catching([&] { KvClient c(kLoopback, port, kSecret, 0, 1, Deadline::after_ms(300)); });
    int64_t waited = ms_since(t0);
    assert_int_equal(o.status, HVD_ERR_TIMED_OUT);
    assert_contains(o.message, kLoopback + ":" + std::to_string(port));
    assert_true(waited >= 300 && waited < 3000);
    Outcome bad_host = catching(
        [&] { KvClient c("no-such-host.invalid", port, kSecret, 0, 1, Deadline::after_ms(300)); });
    assert_int_equal(bad_host.status, HVD_ERR_TRANSPORT);
}

// Size 0: the first client sets it. Host names resolve; "" binds every interface.
void test_hostname_and_adopted_size(void **) {
    KvServer server("", 0, kSecret, 0, kTimeoutMs);
    KvClient c("localhost", server.port(), kSecret, 0, 1, Deadline::after_ms(kTimeoutMs));
    std::vector<std::string> all = c.all_gather("solo", "me", Deadline::after_ms(kTimeoutMs));
    assert_int_equal(all.size(), 1);
    assert_string_equal(all[0].c_str(), "me");
    c.bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// Between two sessions of a job the rendezvous port is free, and another process may take it
// and accept a rank's connection without ever speaking. The client gives up on a connection
// that sends no CHALLENGE within 2 s and reaches the real server on its next try, instead of
// waiting out its whole init deadline.
void test_silent_peer_on_the_port_then_the_server(void **) {
    Fd foreign = listen_tcp(kLoopback, 0);
    int port = bound_port(foreign.get());
    Outcome o;
    std::thread client([&] {
        o = catching([&] {
            KvClient c(kLoopback, port, kSecret, 0, 1, Deadline::after_ms(15000));
            c.bye();
        });
    });
    Deadline accept_by = Deadline::after_ms(kTimeoutMs);
    while (!wait_readable(foreign.get(), accept_by, 100) && !accept_by.expired()) {
    }
    Fd held = accept_tcp(foreign.get());  // accepted, never answered
    foreign.reset();                      // the listener goes; `held` stays open
    auto t0 = Clock::now();
    KvServer server(kLoopback, port, kSecret, 1, kTimeoutMs);
    client.join();
    if (o.status != HVD_OK) fail_msg("%s", o.message.c_str());
    int64_t waited = ms_since(t0);
    if (waited > 6000) fail_msg("the client reached the server after %lld ms", (long long)waited);
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// Rank 0 of a restarted job binds the launcher's fixed port while something else still holds
// it: the server waits for the port (bounded by its timeout) instead of failing at once.
void test_server_waits_for_a_busy_port(void **) {
    Fd holder = listen_tcp(kLoopback, 0);
    int port = bound_port(holder.get());
    Outcome at_once = catching([&] { Fd fd = listen_tcp(kLoopback, port); });
    assert_int_equal(at_once.status, HVD_ERR_TRANSPORT);
    assert_contains(at_once.message, "in use");
    auto t0 = Clock::now();
    Outcome bounded = catching([&] { KvServer server(kLoopback, port, kSecret, 1, 200); });
    assert_int_equal(bounded.status, HVD_ERR_TRANSPORT);
    assert_contains(bounded.message, kLoopback + ":" + std::to_string(port));
    int64_t waited = ms_since(t0);
    if (waited < 200 || waited > 3000)
        fail_msg("gave up on the busy port after %lld ms", (long long)waited);
    std::thread release([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        holder.reset();
    });
    t0 = Clock::now();
    Outcome served = catching([&] {
        KvServer server(kLoopback, port, kSecret, 1, kTimeoutMs);
        KvClient c(kLoopback, port, kSecret, 0, 1, Deadline::after_ms(kTimeoutMs));
        c.bye();
        assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
    });
    release.join();
    if (served.status != HVD_OK) fail_msg("%s", served.message.c_str());
    assert_true(ms_since(t0) >= 250);
}

// Whether the server closes `fd` within timeout_ms (bytes it sends are discarded).
bool closed_within(int fd, int64_t timeout_ms) {
    std::string buf;
    Deadline deadline = Deadline::after_ms(timeout_ms);
    while (!deadline.expired()) {
        if (!wait_readable(fd, deadline, 100)) continue;
        if (read_available(fd, &buf, 1 << 20) == ReadResult::kClosed) return true;
        buf.clear();
    }
    return false;
}

// Sends what the socket takes now, ignoring errors (the server may already have closed it).
void send_best_effort(int fd, const std::string &data) {
    ssize_t ignored = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
}

const std::string kOversizedLength("\xff\xff\xff\x7f\x02", 5);

// A HELLO with a proof made without the job's secret.
std::string wrong_secret_hello() {
    return encode_frame(KvMsg::kHello,
                        {encode_u32(kKvProtocolVersion), encode_u32(0), encode_u32(2),
                         std::string(kNonceBytes, 'n'), std::string(32, 'p')});
}

// An oversized length prefix is refused at once; a client that sends part of a frame and
// stalls is closed after the handshake deadline; a stream of bytes that never forms a HELLO
// is cut off after the pre-authentication limit, without reading the rest.
void test_abuse_preauth_bounds(void **) {
    KvServer server(kLoopback, 0, kSecret, 1, 30000);
    assert_true(server_drops_garbage(server.port(), kOversizedLength));

    Fd slow = connect_tcp(kLoopback, server.port(), Deadline::after_ms(kTimeoutMs));
    send_all(slow.get(), std::string("\x10\x00", 2), Deadline::after_ms(kTimeoutMs), "slow");
    auto t0 = Clock::now();
    assert_true(closed_within(slow.get(), 9000));
    assert_true(ms_since(t0) >= 3000);

    // A frame header announcing 4 KiB, then a body that never ends (1 MiB offered).
    Fd flood = connect_tcp(kLoopback, server.port(), Deadline::after_ms(kTimeoutMs));
    std::string big("\x00\x10\x00\x00\x02", 5);
    big += std::string(size_t{1} << 20, '\x01');
    send_best_effort(flood.get(), big);
    assert_true(closed_within(flood.get(), kTimeoutMs));
    assert_true(server.stats().buffered_bytes < 64 * 1024);
    assert_true(server.stats().dropped >= 3);

    auto c = connect_rank(server.port(), 0, 1);
    c->put("k", "v");
    assert_string_equal(c->get("k", Deadline::after_ms(kTimeoutMs)).c_str(), "v");
    c->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

int64_t vm_rss_kib() {
    for (const std::string &line : read_lines("/proc/self/status"))
        if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
    return -1;
}

// 1,000 abusive connections (garbage, oversized lengths, slow senders, wrong secrets), all
// held open by the abuser, while a 2-rank job joins and exchanges keys: the job completes in
// bounded time, the server holds at most its cap of unauthenticated connections and a bounded
// number of buffered bytes, and the drops are logged in a few lines, not one each.
void test_abuse_thousand_connections(void **) {
    // The abuser's 1,000 ends live in this process too: room for them (a default soft limit
    // is often 1,024).
    rlimit saved{};
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    rlimit room = saved;
    if (room.rlim_cur != RLIM_INFINITY && room.rlim_cur < 4096)
        room.rlim_cur =
            room.rlim_max == RLIM_INFINITY ? 4096 : std::min<rlim_t>(4096, room.rlim_max);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &room), 0);
    StderrCapture log;
    KvServer server(kLoopback, 0, kSecret, 2, 60000);
    const int cap = server.stats().unauthenticated_cap;
    assert_true(cap >= 4 && cap <= 64);
    int64_t rss0 = vm_rss_kib();

    std::atomic<bool> stop{false};
    size_t max_conns = 0, max_buffered = 0;
    std::thread monitor([&] {
        while (!stop.load()) {
            KvServer::Stats s = server.stats();
            max_conns = std::max(max_conns, s.connections);
            max_buffered = std::max(max_buffered, s.buffered_bytes);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    });

    std::atomic<int> opened{0};
    std::vector<Fd> held;
    std::thread abuser([&] {
        const std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        const std::string hello = wrong_secret_hello();
        for (int i = 0; i < 1000; ++i) {
            Fd fd = connect_tcp(kLoopback, server.port(), Deadline::after_ms(kTimeoutMs));
            switch (i % 4) {
                case 0:
                    send_best_effort(fd.get(), garbage);
                    break;
                case 1:
                    send_best_effort(fd.get(), kOversizedLength);
                    break;
                case 2:
                    send_best_effort(fd.get(), std::string("\x40\x00", 2));
                    break;  // slow
                default:
                    send_best_effort(fd.get(), hello);
                    break;
            }
            held.push_back(std::move(fd));
            opened.fetch_add(1);
        }
    });
    while (opened.load() < 500)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));

    // The ranks join and exchange keys while the abuse goes on; they leave once it is over
    // (a server whose ranks all left stops listening).
    auto t0 = Clock::now();
    std::vector<std::string> got0, got1;
    std::unique_ptr<KvClient> c1;
    std::thread r1([&] {
        c1 = connect_rank(server.port(), 1, 2);
        got1 = c1->all_gather("g", "one", Deadline::after_ms(kTimeoutMs));
    });
    auto c0 = connect_rank(server.port(), 0, 2);
    got0 = c0->all_gather("g", "zero", Deadline::after_ms(kTimeoutMs));
    r1.join();
    int64_t job_ms = ms_since(t0);
    int opened_during_job = opened.load();
    abuser.join();
    c0->bye();
    c1->bye();
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
    stop.store(true);
    monitor.join();
    int64_t rss1 = vm_rss_kib();
    KvServer::Stats end = server.stats();
    held.clear();
    log.restore();

    int warnings = log.count("[hvd WARNING]");
    std::printf(
        "abuse: job %lld ms, server held at most %zu connections (cap %d), "
        "%zu buffered bytes, %llu dropped, RSS %+lld KiB, %d warning lines; %d abusive "
        "connections opened by the end of the job\n",
        static_cast<long long>(job_ms), max_conns, cap, max_buffered,
        static_cast<unsigned long long>(end.dropped), static_cast<long long>(rss1 - rss0), warnings,
        opened_during_job);
    for (const auto *got : {&got0, &got1}) {
        assert_int_equal(got->size(), 2);
        assert_string_equal((*got)[0].c_str(), "zero");
        assert_string_equal((*got)[1].c_str(), "one");
    }
    assert_true(job_ms < 10000);
    assert_true(max_conns <= static_cast<size_t>(cap) + 2);
    assert_true(max_buffered <= (static_cast<size_t>(cap) + 2) * 16 * 1024);
    assert_true(rss1 - rss0 < 64 * 1024);
    assert_true(warnings <= 4);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

int open_fds() {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (dirent *e = readdir(d))
        if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n - 1;
}

// With few file descriptors left (a 128-descriptor limit, as in a job run with ulimit -n 128),
// the server takes at most a quarter of what is left, less room for the ranks: 150 abusive
// connections leave the process descriptors to spare, and the ranks still get in.
void test_abuse_fd_budget(void **) {
    rlimit saved{};
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    const int before = open_fds();
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(before + 128);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    {
        KvServer server(kLoopback, 0, kSecret, 2, 30000);
        const int cap = server.stats().unauthenticated_cap;
        assert_true(cap >= 4 && cap <= 128 / 4 - 2);
        std::vector<Fd> held;
        for (int i = 0; i < 150; ++i) {
            // The client ends and the server share this process's limit: a client end that
            // cannot be opened is the limit of this test, not of the server.
            if (open_fds() >= before + 100) break;
            held.push_back(connect_tcp(kLoopback, server.port(), Deadline::after_ms(kTimeoutMs)));
            send_best_effort(held.back().get(), std::string("\x40\x00", 2));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        assert_true(server.stats().connections <= static_cast<size_t>(cap));
        held.resize(held.size() / 2);  // fewer client ends: room for the ranks' own
        std::unique_ptr<KvClient> c1;
        std::thread r1([&] { c1 = connect_rank(server.port(), 1, 2); });
        auto c0 = connect_rank(server.port(), 0, 2);
        r1.join();
        c0->put("k", "v");
        assert_string_equal(c1->get("k", Deadline::after_ms(kTimeoutMs)).c_str(), "v");
        assert_true(server.stats().connections <= static_cast<size_t>(cap) + 2);
        c0->bye();
        c1->bye();
        assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
    }
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_decoder),
        cmocka_unit_test(test_four_ranks_put_get_all_gather),
        cmocka_unit_test(test_get_timeout),
        cmocka_unit_test(test_bad_clients_rejected),
        cmocka_unit_test(test_close_without_bye_reports_failure),
        cmocka_unit_test(test_failure_interrupts_get),
        cmocka_unit_test(test_server_stop_reports_lost),
        cmocka_unit_test(test_server_finishes_after_all_bye),
        cmocka_unit_test(test_server_idle_timeout),
        cmocka_unit_test(test_client_before_server),
        cmocka_unit_test(test_connect_timeout),
        cmocka_unit_test(test_hostname_and_adopted_size),
        cmocka_unit_test(test_silent_peer_on_the_port_then_the_server),
        cmocka_unit_test(test_server_waits_for_a_busy_port),
        cmocka_unit_test(test_abuse_preauth_bounds),
        cmocka_unit_test(test_abuse_thousand_connections),
        cmocka_unit_test(test_abuse_fd_budget),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
