// SPDX-License-Identifier: Apache-2.0
// The rendezvous server: one thread, one poll() loop over the listening socket, a self-pipe
// (so the destructor can stop it at once) and every client connection. Sockets are
// non-blocking and every read is bounded, so one slow or hostile client cannot stall the
// others; a client that misbehaves is dropped with a warning and the loop goes on.
//
// Abuse bounds (the port is reachable by anyone who can connect to it): connections that have
// not authenticated are capped (the oldest is closed when a new one comes), read at most one
// handshake frame's worth of bytes, and get a few seconds to authenticate; the cap is a
// fraction of the file descriptors left when the server starts, so the transports keep theirs.
// Authenticated connections (the job's ranks, at most `size`) do not count against the cap.
// Drops of unauthenticated clients are logged at most once per interval, with a count.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "bootstrap/frame_mac.h"
#include "bootstrap/kv_auth.h"
#include "bootstrap/kv_messages.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/kv_store.h"
#include "bootstrap/kv_table.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"
#include "common/log.h"

namespace hvd::bootstrap {

namespace {

constexpr int64_t kHandshakeTimeoutMs = 5000;  // to send a valid HELLO after connecting
// Before authentication a client sends one HELLO frame: nothing more is read from it.
constexpr size_t kPreAuthBytes = 4 + kMaxHandshakeFrameBytes;
constexpr int kMaxUnauthedConns = 64;
constexpr int kMinUnauthedConns = 4;
constexpr int64_t kFdShareDivisor = 4;         // at most this fraction of the free descriptors
constexpr int64_t kDropLogIntervalMs = 10000;  // one warning line per interval for drops
constexpr int64_t kPollCapMs = 1000;           // upper bound on one poll() sleep
constexpr int64_t kAcceptPauseMs = 100;        // after EMFILE: let connections drain
constexpr size_t kMaxReadPerWake = size_t{1} << 20;      // fairness between clients
constexpr size_t kMaxOutboundBytes = size_t{256} << 20;  // a client that stops reading
constexpr int kMaxAcceptsPerWake = 64;
constexpr int64_t kBusyPortWaitMs = 10000;  // a fixed port another socket holds

enum class RankState : uint8_t { kAbsent, kConnected, kLeft, kDied };

struct Conn {
    int id = -1;
    Fd fd;
    std::string peer;   // "address:port", for log lines
    std::string nonce;  // the challenge sent to it
    Deadline handshake_deadline;
    FrameDecoder in{kMaxHandshakeFrameBytes};
    size_t preauth_read = 0;  // bytes read before authentication
    std::string out;          // frames not yet taken by the socket
    bool authed = false;
    std::optional<FrameMac> mac;  // once authenticated: seals and verifies its frames
    int32_t rank = -1;
    bool said_bye = false;
    bool dead = false;  // to be closed by reap()
    std::string why;    // why it is being closed
};

// Descriptors this process has open now.
int64_t open_fd_count() {
    DIR *d = ::opendir("/proc/self/fd");
    if (!d) return 0;
    int64_t n = 0;
    while (dirent *e = ::readdir(d))
        if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    return n > 0 ? n - 1 : 0;  // less the directory's own descriptor
}

// How many unauthenticated connections the server may hold: a fraction of the descriptors
// left under RLIMIT_NOFILE, less room for the job's ranks, within [kMin, kMax].
int unauthed_cap_for(int32_t size) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return kMaxUnauthedConns;
    int64_t left = static_cast<int64_t>(rl.rlim_cur) - open_fd_count();
    int64_t cap = left / kFdShareDivisor - size;
    return static_cast<int>(std::clamp<int64_t>(cap, kMinUnauthedConns, kMaxUnauthedConns));
}

}  // namespace

struct KvServer::Impl {
    std::string secret;
    int32_t size;
    int64_t idle_timeout_ms;
    Fd listener;
    Fd wake_read, wake_write;
    int port = 0;

    std::map<int, std::unique_ptr<Conn>> conns;
    int next_conn_id = 0;
    KvTable table;
    std::vector<RankState> ranks;
    int num_authed = 0;
    Deadline idle_deadline;  // while nobody is connected: when to give up
    Deadline accept_paused_until = Deadline::after_ms(0);
    int unauthed_cap = kMaxUnauthedConns;
    int num_unauthed = 0;  // live connections not yet authenticated (dead ones until reaped)

    // Rate-limited warnings about dropped unauthenticated clients.
    Deadline drop_log_quiet_until = Deadline::after_ms(0);
    uint64_t drops_unlogged = 0;
    std::atomic<uint64_t> drops_total{0};
    std::atomic<size_t> stat_conns{0}, stat_unauthed{0}, stat_buffered{0};

    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    std::thread thread;

    void run();
    bool serve_once();
    bool done() const;
    int poll_timeout_ms() const;
    void accept_new();
    void on_readable(Conn &c);
    void handle_frame(Conn &c, Frame f);
    void handle_hello(Conn &c, const Frame &f);
    void handle_put(const RankRequest &req);
    void handle_get(Conn &c, const RankRequest &req);
    void accept_rank(Conn &c, int32_t rank, const std::string &client_nonce);
    void reject(Conn &c, const std::string &reason);
    void queue(Conn &c, const std::string &frame);
    void send_sealed(Conn &c, KvMsg type, std::initializer_list<std::string_view> fields);
    void kill(Conn &c, const std::string &why);
    void expire_handshakes();
    void reap();
    void depart(Conn &c);
    void evict_oldest_unauthed();
    void note_drop(const std::string &line);
    void flush_drop_log();
    void update_stats();
};

// ------------------------------------------------------------------ connection lifecycle

void KvServer::Impl::queue(Conn &c, const std::string &frame) {
    if (c.dead) return;
    c.out += frame;
    if (!send_some(c.fd.get(), &c.out)) return kill(c, "connection lost while sending");
    if (c.out.size() > kMaxOutboundBytes) kill(c, "it stopped reading its messages");
}

// A frame to an authenticated connection, with its MAC.
void KvServer::Impl::send_sealed(Conn &c, KvMsg type,
                                 std::initializer_list<std::string_view> fields) {
    if (!c.dead) queue(c, c.mac->seal(type, fields));
}

void KvServer::Impl::kill(Conn &c, const std::string &why) {
    if (c.dead) return;
    c.dead = true;
    c.why = why;
}

void KvServer::Impl::reject(Conn &c, const std::string &reason) {
    // A transient reject (a rank re-joining early; it reconnects) is routine, not a warning.
    if (reason.rfind(kRejectRetryPrefix, 0) == 0)
        HVD_LOG(kDebug, -1, "rendezvous server: asked the client at %s to reconnect: %s",
                c.peer.c_str(), reason.c_str());
    else
        note_drop(strprintf("rejected the client at %s: %s", c.peer.c_str(), reason.c_str()));
    queue(c, encode_frame(KvMsg::kReject, {reason}));
    kill(c, reason);
}

// A rate-limited warning: the first drop of an interval is logged with the count of the
// drops not logged since; the others are only counted (flush_drop_log reports them).
void KvServer::Impl::note_drop(const std::string &line) {
    drops_total.fetch_add(1, std::memory_order_relaxed);
    if (!drop_log_quiet_until.expired()) {
        ++drops_unlogged;
        return;
    }
    if (drops_unlogged > 0)
        HVD_LOG(kWarning, -1,
                "rendezvous server: %s (and %llu more unauthenticated clients dropped before)",
                line.c_str(), static_cast<unsigned long long>(drops_unlogged));
    else
        HVD_LOG(kWarning, -1, "rendezvous server: %s", line.c_str());
    drops_unlogged = 0;
    drop_log_quiet_until = Deadline::after_ms(kDropLogIntervalMs);
}

void KvServer::Impl::flush_drop_log() {
    if (drops_unlogged == 0 || !drop_log_quiet_until.expired()) return;
    HVD_LOG(kWarning, -1,
            "rendezvous server: dropped %llu more unauthenticated clients in the last %lld s",
            static_cast<unsigned long long>(drops_unlogged),
            static_cast<long long>(kDropLogIntervalMs / 1000));
    drops_unlogged = 0;
    drop_log_quiet_until = Deadline::after_ms(kDropLogIntervalMs);
}

// Closes the unauthenticated connection that has waited longest (the lowest id; one already
// dead counts too), at once, to make room for a new one. Only called outside the
// per-connection loop of serve_once.
void KvServer::Impl::evict_oldest_unauthed() {
    for (auto it = conns.begin(); it != conns.end(); ++it) {
        Conn &c = *it->second;
        if (c.authed) continue;
        if (!c.dead)
            note_drop(strprintf("closed the client at %s: %d connections wait to authenticate",
                                c.peer.c_str(), unauthed_cap));
        kill(c, "too many unauthenticated connections");
        --num_unauthed;
        depart(c);
        conns.erase(it);
        return;
    }
}

void KvServer::Impl::accept_new() {
    for (int i = 0; i < kMaxAcceptsPerWake; ++i) {
        Fd fd = accept_tcp(listener.get());
        if (!fd.valid()) {
            if (errno == EMFILE || errno == ENFILE) {
                note_drop(strprintf("accept: %s; pausing accepts", strerror(errno)));
                accept_paused_until = Deadline::after_ms(kAcceptPauseMs);
            }
            return;
        }
        if (num_unauthed >= unauthed_cap) evict_oldest_unauthed();
        ++num_unauthed;
        auto c = std::make_unique<Conn>();
        c->id = next_conn_id++;
        c->peer = peer_name(fd.get());
        c->fd = std::move(fd);
        c->nonce = new_nonce();
        c->handshake_deadline = Deadline::after_ms(kHandshakeTimeoutMs);
        Conn &ref = *c;
        conns.emplace(ref.id, std::move(c));
        queue(ref, encode_frame(KvMsg::kChallenge, {encode_u32(kKvProtocolVersion), ref.nonce}));
    }
}

// Closes dead connections; a rank that died tells the others, which may kill more
// connections (a failed send), hence the loop.
void KvServer::Impl::reap() {
    for (bool again = true; again;) {
        again = false;
        for (auto it = conns.begin(); it != conns.end();) {
            Conn &c = *it->second;
            if (!c.dead) {
                ++it;
                continue;
            }
            send_some(c.fd.get(), &c.out);  // best effort: a REJECT or last notices
            if (!c.authed) --num_unauthed;
            depart(c);
            it = conns.erase(it);
            again = true;
        }
    }
}

void KvServer::Impl::depart(Conn &c) {
    table.drop_waiters(c.id);
    if (!c.authed) {
        // No rank is lost; but a client that connected and went away unanswered is worth a
        // line when a rank never joins.
        HVD_LOG(kDebug, -1,
                "rendezvous server: closed the connection from %s before its "
                "handshake: %s",
                c.peer.c_str(), c.why.c_str());
        return;
    }
    --num_authed;
    if (num_authed == 0) idle_deadline = Deadline::after_ms(idle_timeout_ms);
    if (c.said_bye) {
        ranks[c.rank] = RankState::kLeft;
        HVD_LOG(kDebug, -1, "rendezvous server: rank %d left", c.rank);
        return;
    }
    ranks[c.rank] = RankState::kDied;
    HVD_LOG(kWarning, -1,
            "rendezvous server: rank %d (%s) disconnected without BYE (%s); telling the other "
            "ranks",
            c.rank, c.peer.c_str(), c.why.c_str());
    std::string dead_rank = encode_u32(static_cast<uint32_t>(c.rank));
    for (auto &kv : conns)
        if (kv.second->authed && kv.second.get() != &c)
            send_sealed(*kv.second, KvMsg::kFailed, {dead_rank});
}

void KvServer::Impl::expire_handshakes() {
    for (auto &kv : conns) {
        Conn &c = *kv.second;
        if (!c.authed && !c.dead && c.handshake_deadline.expired()) {
            note_drop(strprintf("dropped the client at %s: no handshake within %lld ms",
                                c.peer.c_str(), static_cast<long long>(kHandshakeTimeoutMs)));
            kill(c, "handshake timed out");
        }
    }
}

// ------------------------------------------------------------------ protocol

void KvServer::Impl::on_readable(Conn &c) {
    // Before authentication, read no more than one handshake frame can take: a peer that
    // sends more without completing a valid HELLO is dropped, and nothing it sends is held.
    size_t budget = c.authed ? kMaxReadPerWake : kPreAuthBytes - c.preauth_read;
    if (!c.authed && budget == 0) {
        note_drop(strprintf("dropped the client at %s: over %zu bytes before authenticating",
                            c.peer.c_str(), kPreAuthBytes));
        return kill(c, "too many bytes before authenticating");
    }
    size_t before = c.in.buffer()->size();
    ReadResult r = read_available(c.fd.get(), c.in.buffer(), budget);
    if (!c.authed) c.preauth_read += c.in.buffer()->size() - before;
    try {
        Frame f;
        while (!c.dead && (c.mac ? c.mac->next(&c.in, &f) : c.in.next(&f)))
            handle_frame(c, std::move(f));
    } catch (const Error &e) {
        // Garbage from an unauthenticated peer, or a protocol violation by a rank: the
        // connection goes; for a rank this counts as a failure the others must hear of.
        if (c.authed)
            HVD_LOG(kWarning, -1, "rendezvous server: dropped the client at %s (rank %d): %s",
                    c.peer.c_str(), c.rank, e.what());
        else
            note_drop(strprintf("dropped the client at %s: %s", c.peer.c_str(), e.what()));
        kill(c, e.what());
    }
    if (r == ReadResult::kClosed) kill(c, "connection closed");
}

void KvServer::Impl::handle_frame(Conn &c, Frame f) {
    if (!c.authed) return handle_hello(c, f);
    RankRequest req = read_rank_request(std::move(f), c.peer);
    switch (req.type) {
        case KvMsg::kPut:
            return handle_put(req);
        case KvMsg::kGet:
            return handle_get(c, req);
        default:  // kBye
            c.said_bye = true;
            return kill(c, "said BYE");
    }
}

void KvServer::Impl::handle_hello(Conn &c, const Frame &f) {
    HelloClaim claim;
    std::string refusal = read_hello(f, secret, c.nonce, c.peer, &claim);
    if (!refusal.empty()) return reject(c, refusal);
    const int32_t rank = claim.rank;
    if (size == 0 && claim.size > 0) {  // the first authenticated client sets the job size
        size = claim.size;
        ranks.assign(static_cast<size_t>(size), RankState::kAbsent);
    }
    if (claim.size != size)
        return reject(c, strprintf("rank %d claims a job of %d ranks, this job has %d", rank,
                                   claim.size, size));
    if (rank < 0 || rank >= size)
        return reject(c, strprintf("rank %d is outside [0, %d)", rank, size));
    if (ranks[rank] == RankState::kLeft)
        return reject(c, strprintf("%srank %d already left this session of the job",
                                   kRejectRetryPrefix, rank));
    if (ranks[rank] != RankState::kAbsent)
        return reject(c, strprintf("rank %d has already joined this job", rank));
    accept_rank(c, rank, claim.client_nonce);
}

void KvServer::Impl::accept_rank(Conn &c, int32_t rank, const std::string &client_nonce) {
    c.authed = true;
    --num_unauthed;
    c.rank = rank;
    ranks[rank] = RankState::kConnected;
    ++num_authed;
    c.in.set_max_frame_bytes(kMaxFrameBytes);
    HVD_LOG(kDebug, -1, "rendezvous server: rank %d joined from %s", rank, c.peer.c_str());
    queue(c, encode_frame(KvMsg::kWelcome,
                          {proof_field(server_proof(secret, client_nonce, c.nonce))}));
    c.mac.emplace(secret, c.nonce, client_nonce, FrameMac::Side::kServer);
    // A late joiner must learn of ranks that already died, or it would wait for their keys.
    for (size_t r = 0; r < ranks.size(); ++r)
        if (ranks[r] == RankState::kDied)
            send_sealed(c, KvMsg::kFailed, {encode_u32(static_cast<uint32_t>(r))});
}

void KvServer::Impl::handle_put(const RankRequest &req) {
    std::vector<KvWaiter> waiters = table.put(req.key, req.value);
    for (const KvWaiter &w : waiters) {
        auto it = conns.find(w.conn_id);
        if (it == conns.end()) continue;
        send_sealed(*it->second, KvMsg::kValue, {encode_u64(w.request_id), req.value});
    }
}

void KvServer::Impl::handle_get(Conn &c, const RankRequest &req) {
    const std::string *value = table.get_or_park(req.key, KvWaiter{c.id, req.request_id});
    if (value) send_sealed(c, KvMsg::kValue, {encode_u64(req.request_id), *value});
}

// ------------------------------------------------------------------ the loop

bool KvServer::Impl::done() const {
    if (size > 0 && !ranks.empty()) {
        bool all_gone = true;
        for (RankState s : ranks)
            all_gone = all_gone && (s == RankState::kLeft || s == RankState::kDied);
        if (all_gone) return true;
    }
    return num_authed == 0 && idle_deadline.expired();
}

int KvServer::Impl::poll_timeout_ms() const {
    Deadline next = Deadline::after_ms(kPollCapMs);
    if (num_authed == 0) next = Deadline::earlier(next, idle_deadline);
    for (const auto &kv : conns)
        if (!kv.second->authed) next = Deadline::earlier(next, kv.second->handshake_deadline);
    if (drops_unlogged > 0) next = Deadline::earlier(next, drop_log_quiet_until);
    return static_cast<int>(next.remaining_ms(kPollCapMs));
}

// One poll round. Returns false when the server should stop.
bool KvServer::Impl::serve_once() {
    std::vector<pollfd> fds;
    fds.push_back({wake_read.get(), POLLIN, 0});
    bool accepting = accept_paused_until.expired();
    fds.push_back({accepting ? listener.get() : -1, POLLIN, 0});
    std::vector<Conn *> order;
    for (auto &kv : conns) {
        Conn &c = *kv.second;
        fds.push_back({c.fd.get(), static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
        order.push_back(&c);
    }
    int rc = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (rc < 0 && errno != EINTR)
        throw Error(HVD_ERR_INTERNAL, strprintf("rendezvous server: poll: %s", strerror(errno)));
    if (rc > 0 && fds[0].revents) return false;  // stop requested
    for (size_t i = 0; rc > 0 && i < order.size(); ++i) {
        Conn &c = *order[i];
        short ev = fds[i + 2].revents;
        if (ev & POLLOUT) queue(c, "");
        if (ev & (POLLIN | POLLHUP | POLLERR)) on_readable(c);
    }
    expire_handshakes();
    reap();
    // After the loop over `order`: accepting may close (evict) connections at once.
    if (rc > 0 && fds[1].revents) accept_new();
    flush_drop_log();
    update_stats();
    return !done();
}

void KvServer::Impl::update_stats() {
    size_t buffered = 0;
    for (const auto &kv : conns)
        buffered += kv.second->in.buffer()->capacity() + kv.second->out.capacity();
    stat_conns.store(conns.size(), std::memory_order_relaxed);
    stat_unauthed.store(static_cast<size_t>(num_unauthed), std::memory_order_relaxed);
    stat_buffered.store(buffered, std::memory_order_relaxed);
}

void KvServer::Impl::run() {
    try {
        while (serve_once()) {
        }
    } catch (const std::exception &e) {
        HVD_LOG(kError, -1, "rendezvous server stopped: %s", e.what());
    }
    conns.clear();
    listener.reset();
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
    cv.notify_all();
}

// ------------------------------------------------------------------ public class

KvServer::KvServer(const std::string &addr, int port, const std::string &secret, int32_t size,
                   int64_t idle_timeout_ms)
    : impl_(std::make_unique<Impl>()) {
    if (size < 0 || port < 0 || port > 65535)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("rendezvous server: bad size %d or port %d", size, port));
    impl_->secret = secret;
    impl_->size = size;
    impl_->ranks.assign(static_cast<size_t>(size), RankState::kAbsent);
    impl_->idle_timeout_ms = idle_timeout_ms;
    impl_->idle_deadline = Deadline::after_ms(idle_timeout_ms);
    impl_->unauthed_cap = unauthed_cap_for(size);
    // The launcher's port may still be held for a moment (a connection of a previous
    // session of this job closing): wait a little for it, not the whole bootstrap timeout.
    impl_->listener = listen_tcp(addr, port,
                                 Deadline::earlier(Deadline::after_ms(idle_timeout_ms),
                                                   Deadline::after_ms(kBusyPortWaitMs)));
    impl_->port = bound_port(impl_->listener.get());
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0)
        throw Error(HVD_ERR_TRANSPORT, strprintf("rendezvous server: pipe: %s", strerror(errno)));
    impl_->wake_read.reset(pipe_fds[0]);
    impl_->wake_write.reset(pipe_fds[1]);
    Impl *impl = impl_.get();
    impl_->thread = std::thread([impl] { impl->run(); });
}

KvServer::~KvServer() {
    char byte = 1;
    ssize_t ignored = ::write(impl_->wake_write.get(), &byte, 1);
    (void)ignored;  // the pipe is only full if a stop is already pending
    impl_->thread.join();
}

int KvServer::port() const {
    return impl_->port;
}

KvServer::Stats KvServer::stats() const {
    Stats s;
    s.connections = impl_->stat_conns.load(std::memory_order_relaxed);
    s.unauthenticated = impl_->stat_unauthed.load(std::memory_order_relaxed);
    s.buffered_bytes = impl_->stat_buffered.load(std::memory_order_relaxed);
    s.dropped = impl_->drops_total.load(std::memory_order_relaxed);
    s.unauthenticated_cap = impl_->unauthed_cap;
    return s;
}

bool KvServer::finished() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->finished;
}

bool KvServer::wait_finished(const Deadline &deadline) {
    std::unique_lock<std::mutex> lock(impl_->mu);
    auto pred = [this] { return impl_->finished; };
    if (deadline.infinite())
        impl_->cv.wait(lock, pred);
    else
        impl_->cv.wait_until(lock, deadline.at(), pred);
    return impl_->finished;
}

}  // namespace hvd::bootstrap
