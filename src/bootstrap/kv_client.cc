// SPDX-License-Identifier: Apache-2.0
// The rendezvous client. One blocking-with-deadline API (put/get/all_gather) for bootstrap,
// and a non-blocking one (fd + poll_failures) for the engine's event loop, which learns of a
// dead rank or a dead server from it. Calls are serialised by one mutex.
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "bootstrap/frame_mac.h"
#include "bootstrap/kv_auth.h"
#include "bootstrap/kv_messages.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/kv_store.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"
#include "common/log.h"

namespace hvd::bootstrap {

namespace {

constexpr int64_t kPollSliceMs = 1000;
constexpr size_t kMaxReadPerCall = size_t{4} << 20;
constexpr int kSessionRetryMs = 20;
// A libhvd server sends its CHALLENGE as soon as it accepts a connection. A connection that
// stays silent reached something else that holds the port (e.g. a socket accepted by another
// process while the port was free between two sessions of the job): waiting for the CHALLENGE
// is bounded per connection (doubling up to the cap, for a server slowed by load), then the
// client reconnects. Once HELLO is sent the server may have taken the rank, so the answer to
// HELLO is awaited until the overall deadline: abandoning it could make the rank look dead.
constexpr int64_t kChallengeWaitMs = 2000;
constexpr int64_t kChallengeWaitMaxMs = 8000;

// Reconnect: the server answered with a transient REJECT (kRejectRetryPrefix), closed the
// connection during the handshake, or (silent) sent no CHALLENGE in time.
struct SessionEnded : std::runtime_error {
    explicit SessionEnded(const std::string &what, bool silent_peer = false)
        : std::runtime_error(what), silent(silent_peer) {}
    bool silent;
};

}  // namespace

struct KvClient::Impl {
    std::string where;  // "host:port" of the server, for messages
    int32_t rank = -1;
    int32_t size = 0;
    Fd fd;
    std::atomic<int> fd_num{-1};  // fd() without the lock: get() may hold it for long
    FrameDecoder in{kMaxHandshakeFrameBytes};
    std::optional<FrameMac> mac;  // after the handshake: seals and verifies every frame
    std::mutex mu;

    uint64_t next_request = 1;
    std::set<uint64_t> awaited;               // GETs whose answer is still wanted
    std::map<uint64_t, std::string> answers;  // answers to awaited GETs
    std::vector<int32_t> failed;              // every rank reported failed, in arrival order
    std::vector<int32_t> unreported;          // failures poll_failures() has not returned yet
    bool server_lost = false;
    std::string lost_why;  // why the server was lost, for the errors that follow
    bool lost_reported = false;
    bool left = false;  // bye() called

    void handshake(const std::string &secret, const Deadline &deadline, int64_t challenge_wait_ms);
    Frame read_handshake_frame(const Deadline &deadline, const char *what_missing);
    void send(const std::string &bytes, const Deadline &deadline);
    bool pump(const Deadline &deadline, bool wait);
    void dispatch(Frame f);
    void lose_server(const std::string &why);
    std::string lost_detail() const { return lost_why.empty() ? "" : " (" + lost_why + ")"; }
    void close_socket();
    void check_usable(const char *op);
    void check_failures(const std::string &key);
    std::vector<std::string> get_many(const std::vector<std::string> &keys,
                                      const Deadline &deadline);
};

// ------------------------------------------------------------------ socket plumbing

void KvClient::Impl::close_socket() {
    fd.reset();
    fd_num.store(-1);
}

void KvClient::Impl::lose_server(const std::string &why) {
    if (server_lost) return;
    server_lost = true;
    lost_why = why;
    HVD_LOG(kWarning, rank, "lost the rendezvous server at %s: %s", where.c_str(), why.c_str());
}

void KvClient::Impl::send(const std::string &bytes, const Deadline &deadline) {
    try {
        send_all(fd.get(), bytes, deadline, "rendezvous at " + where);
    } catch (const Error &e) {
        if (e.status() == HVD_ERR_TRANSPORT) lose_server(e.what());
        throw;
    }
}

// Reads what has arrived (waiting for it until the deadline when `wait`) and dispatches
// every complete frame. Returns false once the connection is gone.
bool KvClient::Impl::pump(const Deadline &deadline, bool wait) {
    if (!fd.valid()) return false;
    if (wait && !wait_readable(fd.get(), deadline, kPollSliceMs)) return true;
    ReadResult r = read_available(fd.get(), in.buffer(), kMaxReadPerCall);
    try {
        Frame f;
        while (mac->next(&in, &f))
            dispatch(std::move(f));
    } catch (const Error &e) {
        lose_server(strprintf("protocol error: %s", e.what()));
        close_socket();
        return false;
    }
    if (r == ReadResult::kOpen) return true;
    // EOF: expected after our BYE, a loss otherwise.
    if (!left) lose_server("connection closed (its process exited?)");
    close_socket();
    return false;
}

void KvClient::Impl::dispatch(Frame f) {
    ServerNotice n = read_server_notice(std::move(f), where);
    if (n.type == KvMsg::kValue) {
        // Answers to GETs that already timed out are dropped here.
        if (awaited.erase(n.request_id)) answers[n.request_id] = std::move(n.value);
        return;
    }
    if (std::find(failed.begin(), failed.end(), n.failed_rank) != failed.end()) return;
    failed.push_back(n.failed_rank);
    unreported.push_back(n.failed_rank);
}

// ------------------------------------------------------------------ handshake

Frame KvClient::Impl::read_handshake_frame(const Deadline &deadline, const char *what_missing) {
    Frame f;
    for (;;) {
        if (in.next(&f)) return f;
        if (deadline.expired())
            throw Error(HVD_ERR_TIMED_OUT,
                        strprintf("rendezvous at %s: rank %d got no handshake answer (%s) "
                                  "before the deadline",
                                  where.c_str(), rank, what_missing));
        if (!wait_readable(fd.get(), deadline, kPollSliceMs)) continue;
        if (read_available(fd.get(), in.buffer(), kMaxHandshakeFrameBytes) == ReadResult::kClosed) {
            if (in.next(&f)) return f;  // e.g. a REJECT sent just before closing
            // Typically the server of a session that just ended (every rank finalized) shutting
            // down; the next session's server will answer, so reconnect.
            throw SessionEnded(
                strprintf("rendezvous at %s closed the connection during rank "
                          "%d's handshake",
                          where.c_str(), rank));
        }
    }
}

void KvClient::Impl::handshake(const std::string &secret, const Deadline &deadline,
                               int64_t challenge_wait_ms) {
    Frame challenge;
    try {
        challenge = read_handshake_frame(
            Deadline::earlier(deadline, Deadline::after_ms(challenge_wait_ms)), "CHALLENGE");
    } catch (const Error &e) {
        if (e.status() != HVD_ERR_TIMED_OUT || deadline.expired()) throw;
        throw SessionEnded(
            strprintf("rendezvous at %s sent rank %d no CHALLENGE within %lld ms "
                      "(not a rendezvous server?)",
                      where.c_str(), rank, static_cast<long long>(challenge_wait_ms)),
            true);
    }
    const std::string server_nonce = read_challenge(challenge, where, rank);

    std::string client_nonce = new_nonce();
    std::string hello = encode_frame(
        KvMsg::kHello, {encode_u32(kKvProtocolVersion), encode_u32(static_cast<uint32_t>(rank)),
                        encode_u32(static_cast<uint32_t>(size)), client_nonce,
                        proof_field(client_proof(secret, server_nonce, rank, size))});
    try {
        // send_all, not send(): a failure here must not mark the server lost (lose_server),
        // since the client reconnects.
        send_all(fd.get(), hello, deadline, "rendezvous at " + where);
    } catch (const Error &e) {
        // Reset right after its CHALLENGE: typically a session's server shutting down.
        if (e.status() != HVD_ERR_TRANSPORT) throw;
        throw SessionEnded(e.what());
    }

    Frame answer = read_handshake_frame(deadline, "answer to its HELLO");
    HelloAnswer verdict =
        read_hello_answer(answer, secret, client_nonce, server_nonce, where, rank);
    if (verdict.retry)
        throw SessionEnded(strprintf("rendezvous at %s: rank %d: %s", where.c_str(), rank,
                                     verdict.reason.c_str()));
    in.set_max_frame_bytes(kMaxFrameBytes);
    mac.emplace(secret, server_nonce, client_nonce, FrameMac::Side::kClient);
}

// ------------------------------------------------------------------ requests

void KvClient::Impl::check_usable(const char *op) {
    if (left)
        throw Error(HVD_ERR_NOT_READY,
                    strprintf("rendezvous: rank %d called %s after bye()", rank, op));
    if (server_lost || !fd.valid())
        throw Error(HVD_ERR_PEER_FAILED,
                    strprintf("rendezvous: rank %d cannot %s: the server at %s is gone%s", rank, op,
                              where.c_str(), lost_detail().c_str()));
}

void KvClient::Impl::check_failures(const std::string &key) {
    if (!failed.empty())
        throw Error(HVD_ERR_PEER_FAILED,
                    strprintf("rank %d failed (its rendezvous connection closed without BYE) "
                              "while rank %d waited for key '%s'",
                              failed.front(), rank, key.c_str()));
    if (server_lost)
        throw Error(HVD_ERR_PEER_FAILED,
                    strprintf("the rendezvous server at %s went away while rank %d waited for "
                              "key '%s'%s",
                              where.c_str(), rank, key.c_str(), lost_detail().c_str()));
}

std::vector<std::string> KvClient::Impl::get_many(const std::vector<std::string> &keys,
                                                  const Deadline &deadline) {
    check_usable("get");
    std::vector<uint64_t> ids;
    std::string frames;
    for (const std::string &key : keys) {
        ids.push_back(next_request++);
        awaited.insert(ids.back());
        frames += mac->seal(KvMsg::kGet, {encode_u64(ids.back()), key});
    }
    auto abandon = [&] {
        for (uint64_t id : ids) {
            awaited.erase(id);
            answers.erase(id);
        }
    };
    try {
        send(frames, deadline);
        for (;;) {
            size_t missing = 0;
            while (missing < ids.size() && answers.count(ids[missing]))
                ++missing;
            if (missing == ids.size()) break;
            check_failures(keys[missing]);
            if (deadline.expired())
                throw Error(HVD_ERR_TIMED_OUT,
                            strprintf("rendezvous: rank %d timed out waiting for key '%s' "
                                      "(server at %s)",
                                      rank, keys[missing].c_str(), where.c_str()));
            pump(deadline, true);
        }
    } catch (...) {
        abandon();
        throw;
    }
    std::vector<std::string> values;
    for (uint64_t id : ids)
        values.push_back(std::move(answers[id]));
    abandon();
    return values;
}

// ------------------------------------------------------------------ public class

KvClient::KvClient(const std::string &addr, int port, const std::string &secret, int32_t rank,
                   int32_t size, const Deadline &deadline)
    : impl_(std::make_unique<Impl>()) {
    impl_->where = endpoint_name(addr, port);
    if (size < 1 || rank < 0 || rank >= size || port < 1 || port > 65535)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("rendezvous client: rank %d of size %d at %s is not valid", rank,
                              size, impl_->where.c_str()));
    impl_->rank = rank;
    impl_->size = size;
    int64_t challenge_wait_ms = kChallengeWaitMs;
    int connections = 0;
    std::string last_retry;  // why the previous connection was given up, for the final error
    auto history = [&] {
        return connections < 2 ? std::string()
                               : strprintf(" (connection %d; the previous one: %s)", connections,
                                           last_retry.c_str());
    };
    for (;;) {
        impl_->fd = connect_tcp(addr, port, deadline);  // closes the previous connection
        impl_->in = FrameDecoder(kMaxHandshakeFrameBytes);
        impl_->mac.reset();
        ++connections;
        try {
            impl_->handshake(secret, deadline, challenge_wait_ms);
            break;
        } catch (const SessionEnded &e) {
            if (deadline.expired()) throw Error(HVD_ERR_TIMED_OUT, e.what() + history());
            HVD_LOG(kDebug, rank, "rendezvous: reconnecting: %s", e.what());
            last_retry = e.what();
            if (e.silent) challenge_wait_ms = std::min(2 * challenge_wait_ms, kChallengeWaitMaxMs);
            std::this_thread::sleep_for(std::chrono::milliseconds(kSessionRetryMs));
        } catch (const Error &e) {
            if (connections < 2) throw;
            throw Error(e.status(), e.what() + history());
        }
    }
    impl_->fd_num.store(impl_->fd.get());
}

KvClient::~KvClient() = default;

void KvClient::put(const std::string &key, const std::string &value) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->check_usable("put");
    if (key.size() + value.size() + 64 > kMaxFrameBytes)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("rendezvous: rank %d put of '%s': %zu bytes exceed the %zu limit",
                              impl_->rank, key.c_str(), value.size(), kMaxFrameBytes));
    impl_->send(impl_->mac->seal(KvMsg::kPut, {key, value}), Deadline::after_ms(kPutTimeoutMs));
}

std::string KvClient::get(const std::string &key, const Deadline &deadline) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->get_many({key}, deadline).front();
}

std::vector<std::string> KvClient::all_gather(const std::string &key_prefix,
                                              const std::string &mine, const Deadline &deadline) {
    put(key_prefix + "/" + std::to_string(impl_->rank), mine);
    std::vector<std::string> keys;
    for (int32_t r = 0; r < impl_->size; ++r)
        keys.push_back(key_prefix + "/" + std::to_string(r));
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->get_many(keys, deadline);
}

int32_t KvClient::rank() const {
    return impl_->rank;
}
int32_t KvClient::size() const {
    return impl_->size;
}

int KvClient::fd() const {
    return impl_->fd_num.load();
}

std::vector<int32_t> KvClient::poll_failures() {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->left) impl_->pump(Deadline::after_ms(0), false);
    std::vector<int32_t> out;
    out.swap(impl_->unreported);
    if (impl_->server_lost && !impl_->lost_reported) {
        impl_->lost_reported = true;
        out.push_back(kServerLost);
    }
    return out;
}

void KvClient::bye() {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->left) return;
    impl_->left = true;
    if (!impl_->fd.valid()) return;
    Deadline deadline = Deadline::after_ms(kByeTimeoutMs);
    try {
        impl_->send(impl_->mac->seal(KvMsg::kBye, {}), deadline);
        // The server closes after BYE; waiting for that EOF proves that everything sent
        // before was processed (closing first could reset the connection and lose it).
        while (impl_->pump(deadline, true) && !deadline.expired()) {
        }
    } catch (const Error &e) {
        HVD_LOG(kDebug, impl_->rank, "rendezvous bye: %s", e.what());
    }
    impl_->close_socket();
}

}  // namespace hvd::bootstrap
