// SPDX-License-Identifier: Apache-2.0
// Small, deadline-bounded TCP helpers for the rendezvous: every socket here is non-blocking,
// so no call can wait longer than the deadline it is given.
#pragma once

#include <string>

#include "common/deadline.h"

namespace hvd::bootstrap {

// Owns a file descriptor; closes it on destruction.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd &&other) noexcept : fd_(other.release()) {}
    Fd &operator=(Fd &&other) noexcept;
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int release();
    void reset(int fd = -1);

  private:
    int fd_ = -1;
};

// "host:port", for messages.
std::string endpoint_name(const std::string &addr, int port);

// A non-blocking listening socket on addr:port (addr "" or "0.0.0.0": every IPv4 interface;
// otherwise a host name or address, resolved with getaddrinfo). port 0 picks a free port.
// A fixed port that is in use (another socket still holds it) is retried until `busy_until`
// (default: no retry). Throws hvd::Error(HVD_ERR_TRANSPORT) naming the endpoint if nothing
// could be bound.
Fd listen_tcp(const std::string &addr, int port,
              const Deadline &busy_until = Deadline::after_ms(0));

// The port a bound socket listens on.
int bound_port(int fd);

// Connects to addr:port, retrying refusals and unreachable hosts until the deadline, since
// the server may start after the client. Returns a non-blocking socket with TCP_NODELAY and
// TCP keepalive (a peer silent for HVD_PEER_TIMEOUT fails the connection).
// Throws hvd::Error: HVD_ERR_TIMED_OUT (nothing accepted in time, with the last error),
// HVD_ERR_TRANSPORT (the host name does not resolve).
Fd connect_tcp(const std::string &addr, int port, const Deadline &deadline);

// Accepts one pending connection (non-blocking, close-on-exec, TCP_NODELAY, keepalive as
// above); an invalid Fd
// when none is pending or accept failed (errno tells which).
Fd accept_tcp(int listen_fd);

// Makes fd non-blocking; throws hvd::Error(HVD_ERR_TRANSPORT) on failure.
void set_nonblocking(int fd);

// The peer's "address:port", or "?" if unknown, for log lines.
std::string peer_name(int fd);

// Sends all of data on a socket (blocking or not), waiting for buffer space until the deadline.
// Throws hvd::Error: HVD_ERR_TIMED_OUT, or HVD_ERR_TRANSPORT (connection lost) with `what`
// (e.g. "rendezvous at host:port") in the message. Never raises SIGPIPE.
void send_all(int fd, const std::string &data, const Deadline &deadline, const std::string &what);

// Sends as much of *data as the socket takes now and erases it from *data. Returns false when
// the connection is broken.
bool send_some(int fd, std::string *data);

enum class ReadResult { kOpen, kClosed };
// Appends what is readable now (up to max_bytes) to *buf without blocking. kClosed on EOF or
// a socket error (errno kept for the caller's message).
ReadResult read_available(int fd, std::string *buf, size_t max_bytes);

// Waits until fd is readable (or has an error/hangup), at most until the deadline and at most
// cap_ms. Returns true when readable; the caller loops on its own condition.
bool wait_readable(int fd, const Deadline &deadline, int64_t cap_ms);

}  // namespace hvd::bootstrap
