// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "config/read.h"

namespace hvd::bootstrap {

namespace {

// A connect that hangs (SYN to a black-holed address) gives up after this long, so the next
// address of a multi-address host gets its turn.
constexpr int64_t kConnectAttemptCapMs = 5000;
constexpr int64_t kRetryMinMs = 10;
constexpr int64_t kRetryMaxMs = 500;
constexpr int kListenBacklog = 1024;

struct AddrInfoDeleter {
    void operator()(addrinfo *ai) const { freeaddrinfo(ai); }
};
using AddrList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo; returns an empty list and sets *gai_rc when it fails.
AddrList resolve(const char *host, int port, int family, int flags, int *gai_rc) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags | AI_NUMERICSERV;
    addrinfo *res = nullptr;
    std::string service = std::to_string(port);
    *gai_rc = getaddrinfo(host, service.c_str(), &hints, &res);
    return AddrList(*gai_rc == 0 ? res : nullptr);
}

void set_nodelay(int fd) {
    int one = 1;
    // Requests and answers are small and latency-bound; a failure only costs latency.
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// A peer whose host vanished (powered off, cut off) never closes its connections: without
// probes an idle connection to it looks alive forever, and one with unanswered data only
// fails after TCP's retransmissions give up (about 15 minutes). Keepalive probes on idle
// connections, and a limit on unacknowledged data, make either fail in about
// HVD_PEER_TIMEOUT seconds. A failure to set them leaves the connection as it was.
void set_liveness(int fd) {
    const int64_t timeout_s = config::get_int(config::Setting::kPeerTimeout);
    if (timeout_s <= 0) return;
    const int on = 1;
    const int idle = static_cast<int>(std::max<int64_t>(1, timeout_s / 2));
    const int interval = static_cast<int>(std::max<int64_t>(1, timeout_s / 10));
    const int count = std::max(1, static_cast<int>(timeout_s) / interval);
    const unsigned user_timeout_ms = static_cast<unsigned>(timeout_s * 1000);
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

void tune_connection(int fd) {
    set_nodelay(fd);
    set_liveness(fd);
}

Fd new_socket(const addrinfo *ai) {
    return Fd(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
}

bool same_endpoint(const sockaddr_storage &a, const sockaddr_storage &b) {
    if (a.ss_family != b.ss_family) return false;
    if (a.ss_family == AF_INET) {
        auto &x = reinterpret_cast<const sockaddr_in &>(a);
        auto &y = reinterpret_cast<const sockaddr_in &>(b);
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    if (a.ss_family == AF_INET6) {
        auto &x = reinterpret_cast<const sockaddr_in6 &>(a);
        auto &y = reinterpret_cast<const sockaddr_in6 &>(b);
        return x.sin6_port == y.sin6_port &&
               std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
    }
    return false;
}

// True when a connected socket's two ends are the same address and port.
bool connected_to_itself(int fd) {
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_len) != 0) return false;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peer_len) != 0) return false;
    return same_endpoint(local, peer);
}

// One non-blocking connect to one address, bounded by the deadline and the attempt cap.
Fd try_connect(const addrinfo *ai, const Deadline &deadline, std::string *last_error) {
    Fd fd = new_socket(ai);
    if (!fd.valid()) {
        *last_error = strerror(errno);
        return Fd();
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) return fd;
    if (errno != EINPROGRESS) {
        *last_error = strerror(errno);
        return Fd();
    }
    pollfd p{fd.get(), POLLOUT, 0};
    int rc = ::poll(&p, 1, static_cast<int>(deadline.remaining_ms(kConnectAttemptCapMs)));
    if (rc <= 0) {
        *last_error = rc == 0 ? "connect timed out" : strerror(errno);
        return Fd();
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
        *last_error = strerror(err);
        return Fd();
    }
    if (connected_to_itself(fd.get())) {
        // With no server listening, a connect to a port of this host's automatic range can
        // pick that very port as its own and succeed (TCP simultaneous open); it would then
        // hold the port the server is about to bind. Drop it and try again.
        *last_error = "connected to itself (no server listening yet)";
        return Fd();
    }
    return fd;
}

void sleep_until_retry(const Deadline &deadline, int64_t ms) {
    ::poll(nullptr, 0, static_cast<int>(deadline.remaining_ms(ms)));
}

}  // namespace

Fd &Fd::operator=(Fd &&other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
}

int Fd::release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
}

void Fd::reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

std::string endpoint_name(const std::string &addr, int port) {
    return (addr.empty() ? std::string("*") : addr) + ":" + std::to_string(port);
}

void set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        throw Error(HVD_ERR_TRANSPORT, strprintf("fcntl(O_NONBLOCK): %s", strerror(errno)));
}

Fd listen_tcp(const std::string &addr, int port, const Deadline &busy_until) {
    bool any = addr.empty() || addr == "0.0.0.0";
    int64_t backoff_ms = kRetryMinMs;
    for (;;) {
        int gai_rc = 0;
        AddrList list = resolve(any ? nullptr : addr.c_str(), port, any ? AF_INET : AF_UNSPEC,
                                AI_PASSIVE, &gai_rc);
        if (!list)
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("rendezvous server: cannot resolve %s: %s",
                                  endpoint_name(addr, port).c_str(), gai_strerror(gai_rc)));
        std::string last_error = "no usable address";
        bool busy = false;
        for (const addrinfo *ai = list.get(); ai; ai = ai->ai_next) {
            Fd fd = new_socket(ai);
            int one = 1;
            // A restarted job must be able to rebind a port whose old connections linger in
            // TIME_WAIT.
            if (fd.valid()) (void)setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (fd.valid() && ::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 &&
                ::listen(fd.get(), kListenBacklog) == 0)
                return fd;
            busy = busy || errno == EADDRINUSE;
            last_error = strerror(errno);
        }
        if (!busy || port == 0 || busy_until.expired())
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("rendezvous server: cannot listen on %s: %s",
                                  endpoint_name(addr, port).c_str(), last_error.c_str()));
        sleep_until_retry(busy_until, backoff_ms);
        backoff_ms = std::min(backoff_ms * 2, kRetryMaxMs);
    }
}

int bound_port(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) return 0;
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
    return 0;
}

Fd connect_tcp(const std::string &addr, int port, const Deadline &deadline) {
    std::string where = endpoint_name(addr, port);
    std::string last_error = "no attempt made";
    int64_t backoff_ms = kRetryMinMs;
    for (;;) {
        int gai_rc = 0;
        AddrList list = resolve(addr.c_str(), port, AF_UNSPEC, 0, &gai_rc);
        // A name that does not exist will not start existing: fail now, not at the deadline.
        if (!list && gai_rc != EAI_AGAIN)
            throw Error(HVD_ERR_TRANSPORT, strprintf("rendezvous: cannot resolve %s: %s",
                                                     where.c_str(), gai_strerror(gai_rc)));
        if (!list) last_error = gai_strerror(gai_rc);
        for (const addrinfo *ai = list.get(); ai; ai = ai->ai_next) {
            Fd fd = try_connect(ai, deadline, &last_error);
            if (fd.valid()) {
                tune_connection(fd.get());
                return fd;
            }
        }
        if (deadline.expired())
            throw Error(HVD_ERR_TIMED_OUT,
                        strprintf("no rendezvous server answered at %s before the deadline "
                                  "(last error: %s)",
                                  where.c_str(), last_error.c_str()));
        sleep_until_retry(deadline, backoff_ms);
        backoff_ms = std::min(backoff_ms * 2, kRetryMaxMs);
    }
}

Fd accept_tcp(int listen_fd) {
    Fd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.valid()) tune_connection(fd.get());
    return fd;
}

std::string peer_name(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) return "?";
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<sockaddr *>(&ss), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return "?";
    return std::string(host) + ":" + serv;
}

void send_all(int fd, const std::string &data, const Deadline &deadline, const std::string &what) {
    size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (deadline.expired())
                throw Error(HVD_ERR_TIMED_OUT,
                            strprintf("%s: send timed out (peer not reading)", what.c_str()));
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, static_cast<int>(deadline.remaining_ms(1000)));
            continue;
        }
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("%s: send failed: %s", what.c_str(), strerror(errno)));
    }
}

bool send_some(int fd, std::string *data) {
    while (!data->empty()) {
        ssize_t n = ::send(fd, data->data(), data->size(), MSG_NOSIGNAL);
        if (n > 0) {
            data->erase(0, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return true;
}

ReadResult read_available(int fd, std::string *buf, size_t max_bytes) {
    char chunk[65536];
    size_t total = 0;
    while (total < max_bytes) {
        ssize_t n = ::recv(fd, chunk, std::min(sizeof chunk, max_bytes - total), 0);
        if (n > 0) {
            buf->append(chunk, static_cast<size_t>(n));
            total += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ReadResult::kOpen;
        return ReadResult::kClosed;  // 0: orderly EOF; < 0: reset or other socket error
    }
    return ReadResult::kOpen;
}

bool wait_readable(int fd, const Deadline &deadline, int64_t cap_ms) {
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(deadline.remaining_ms(cap_ms)));
    return rc > 0;
}

}  // namespace hvd::bootstrap
