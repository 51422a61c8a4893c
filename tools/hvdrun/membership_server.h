// SPDX-License-Identifier: Apache-2.0
// hvdrun's membership service of an elastic job: a TCP listener whose connections speak the
// membership protocol (bootstrap/elastic_protocol.h), driven from the supervisor's poll loop
// (non-blocking sockets, nothing waits). A join request stays open until answer_join() (the
// round formed) or the connection closes; a status request is answered at once. A connection
// that has not sent a valid request within kAuthSeconds is closed, as is one whose request
// fails authentication (logged with the peer's address).
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/elastic_protocol.h"

namespace hvdrun {

class MembershipServer {
  public:
    // The body to answer a status request with.
    using StatusFn = std::function<std::string(const hvd::bootstrap::elastic::Request &)>;
    // Worker `id` asked to join (true) or its join connection closed unanswered (false).
    using JoinFn = std::function<void(int id, bool waiting)>;

    // Listens on `addr` ("" for every IPv4 interface), on a port the kernel picks. Throws
    // std::runtime_error when nothing can be bound.
    MembershipServer(const std::string &addr, std::string secret, StatusFn on_status,
                     JoinFn on_join);
    ~MembershipServer();
    MembershipServer(const MembershipServer &) = delete;
    MembershipServer &operator=(const MembershipServer &) = delete;

    int port() const { return port_; }

    // The descriptors to poll, appended to *fds; on_poll then gets the same entries back.
    void add_poll_fds(std::vector<pollfd> *fds) const;
    void on_poll(const pollfd *fds, size_t count);
    // Closes connections past their authentication time; call after every poll.
    void expire();

    // Sends `body` to worker id's open join request and closes it after. False when the
    // worker has none open.
    bool answer_join(int id, const std::string &body);
    // Answers every open join request with `body` (e.g. the job's end).
    void answer_all_joins(const std::string &body);

    static constexpr double kAuthSeconds = 10.0;

  private:
    using Clock = std::chrono::steady_clock;
    struct Conn {
        int fd = -1;
        std::string server_nonce;
        std::string client_nonce;
        std::string in;
        std::string out;
        int join_id = -1;      // a join request waiting for its round; -1 none
        bool closing = false;  // close once `out` is sent
        Clock::time_point auth_deadline;
    };

    void accept_all();
    void on_readable(Conn *c);
    void on_request(Conn *c, const std::string &line);
    void reply(Conn *c, const std::string &body);
    void flush(Conn *c);
    void drop(Conn *c, const char *why);
    void sweep();

    int listen_fd_ = -1;
    int port_ = 0;
    std::string secret_;
    StatusFn on_status_;
    JoinFn on_join_;
    std::vector<Conn> conns_;
};

}  // namespace hvdrun
