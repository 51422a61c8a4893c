// SPDX-License-Identifier: Apache-2.0
#include "membership_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "rank_env.h"

namespace hvdrun {
namespace {

namespace el = hvd::bootstrap::elastic;

constexpr int kBacklog = 128;
constexpr size_t kMaxConnections = 1024;

std::string peer_of(int fd) {
    sockaddr_storage ss = {};
    socklen_t len = sizeof ss;
    char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) == 0)
        getnameinfo(reinterpret_cast<sockaddr *>(&ss), len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV);
    return std::string(host) + ":" + port;
}

int listen_on(const std::string &addr, int *port) {
    addrinfo hints = {};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    hints.ai_family = addr.empty() ? AF_INET : AF_UNSPEC;
    addrinfo *found = nullptr;
    int rc = getaddrinfo(addr.empty() ? nullptr : addr.c_str(), "0", &hints, &found);
    if (rc != 0)
        throw std::runtime_error("membership service: cannot resolve '" + addr +
                                 "': " + gai_strerror(rc));
    int fd = -1;
    std::string last = "no address";
    for (addrinfo *ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) continue;
        sockaddr_storage bound = {};
        socklen_t len = sizeof bound;
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, kBacklog) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &len) == 0) {
            *port = bound.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
            break;
        }
        last = std::strerror(errno);
        close(fd);
        fd = -1;
    }
    freeaddrinfo(found);
    if (fd < 0)
        throw std::runtime_error("membership service: cannot listen on '" + addr + "': " + last);
    return fd;
}

}  // namespace

MembershipServer::MembershipServer(const std::string &addr, std::string secret, StatusFn on_status,
                                   JoinFn on_join)
    : secret_(std::move(secret)), on_status_(std::move(on_status)), on_join_(std::move(on_join)) {
    listen_fd_ = listen_on(addr, &port_);
}

MembershipServer::~MembershipServer() {
    for (Conn &c : conns_)
        if (c.fd >= 0) close(c.fd);
    if (listen_fd_ >= 0) close(listen_fd_);
}

void MembershipServer::add_poll_fds(std::vector<pollfd> *fds) const {
    fds->push_back({listen_fd_, POLLIN, 0});
    for (const Conn &c : conns_)
        fds->push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
}

void MembershipServer::on_poll(const pollfd *fds, size_t count) {
    // conns_ may grow (accept) or shrink (sweep) only after the entries are matched.
    for (size_t i = 1; i < count && i - 1 < conns_.size(); ++i) {
        Conn &c = conns_[i - 1];
        if (fds[i].fd != c.fd || fds[i].revents == 0) continue;
        if (fds[i].revents & POLLOUT) flush(&c);
        if (c.fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) on_readable(&c);
    }
    if (count > 0 && fds[0].revents != 0) accept_all();
    sweep();
}

void MembershipServer::expire() {
    Clock::time_point now = Clock::now();
    for (Conn &c : conns_) {
        if (c.fd >= 0 && c.join_id < 0 && !c.closing && now >= c.auth_deadline)
            drop(&c, "no valid request in time");
    }
    sweep();
}

void MembershipServer::accept_all() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        if (conns_.size() >= kMaxConnections) {
            close(fd);
            continue;
        }
        Conn c;
        c.fd = fd;
        c.server_nonce = random_hex(el::kNonceHexChars / 2);
        c.out = el::greeting_line(c.server_nonce);
        c.auth_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(kAuthSeconds));
        conns_.push_back(std::move(c));
        flush(&conns_.back());
    }
}

void MembershipServer::on_readable(Conn *c) {
    char buf[2048];
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        drop(c, nullptr);
        return;
    }
    if (n < 0 || c->join_id >= 0 || c->closing) return;  // nothing more is expected
    c->in.append(buf, static_cast<size_t>(n));
    size_t nl = c->in.find('\n');
    if (nl == std::string::npos) {
        if (c->in.size() > el::kMaxLineBytes) drop(c, "overlong request");
        return;
    }
    on_request(c, c->in.substr(0, nl + 1));
}

void MembershipServer::on_request(Conn *c, const std::string &line) {
    el::Request request;
    std::string err;
    if (!el::parse_request(secret_, c->server_nonce, line, &request, &c->client_nonce, &err)) {
        drop(c, err.c_str());
        return;
    }
    if (request.kind == el::RequestKind::kStatus) {
        reply(c, on_status_(request));
        return;
    }
    const int id = static_cast<int>(request.worker_id);
    for (Conn &other : conns_) {
        if (&other != c && other.join_id == id) {
            other.join_id = -1;  // superseded: the worker asks again on a new connection
            drop(&other, nullptr);
        }
    }
    c->join_id = id;
    on_join_(id, true);
}

bool MembershipServer::answer_join(int id, const std::string &body) {
    for (Conn &c : conns_) {
        if (c.fd >= 0 && c.join_id == id) {
            c.join_id = -1;
            reply(&c, body);
            return true;
        }
    }
    return false;
}

void MembershipServer::answer_all_joins(const std::string &body) {
    for (Conn &c : conns_) {
        if (c.fd >= 0 && c.join_id >= 0) {
            c.join_id = -1;
            reply(&c, body);
        }
    }
}

void MembershipServer::reply(Conn *c, const std::string &body) {
    c->out += el::reply_line(secret_, c->client_nonce, c->server_nonce, body);
    c->closing = true;
    flush(c);
}

void MembershipServer::flush(Conn *c) {
    while (!c->out.empty()) {
        ssize_t n = send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            drop(c, nullptr);
            return;
        }
        c->out.erase(0, static_cast<size_t>(n));
    }
    if (c->closing) drop(c, nullptr);
}

void MembershipServer::drop(Conn *c, const char *why) {
    if (c->fd < 0) return;
    if (why != nullptr)
        std::fprintf(stderr, "hvdrun: membership service: closed the connection from %s: %s\n",
                     peer_of(c->fd).c_str(), why);
    close(c->fd);
    c->fd = -1;
    if (c->join_id >= 0) {
        int id = c->join_id;
        c->join_id = -1;
        on_join_(id, false);
    }
}

void MembershipServer::sweep() {
    conns_.erase(
        std::remove_if(conns_.begin(), conns_.end(), [](const Conn &c) { return c.fd < 0; }),
        conns_.end());
}

}  // namespace hvdrun
