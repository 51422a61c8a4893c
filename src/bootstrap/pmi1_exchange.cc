// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/pmi1_exchange.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "bootstrap/pmi1_wire.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"

namespace hvd::bootstrap {

namespace {

constexpr int64_t kFinalizeWaitMs = 5000;
constexpr size_t kMaxAnswer = 4096;  // PMI-1 answers are a few hundred bytes at most

using Fields = std::map<std::string, std::string>;

// The process's standing with the process manager: introduced once, kept until exit.
struct Client {
    int fd = -1;    // >= 0 once init was sent: the manager then expects a finalize
    pid_t pid = 0;  // the process that sent it (a forked child must not finalize it)
    dev_t dev = 0;  // and the socket's identity, should the descriptor be reused
    ino_t ino = 0;
    bool ready = false;  // init answered, limits and key-value space known
    std::string broken;  // why an earlier exchange failed, leaving the protocol's state unknown
    std::string kvsname;
    size_t keylen_max = 64;  // PMI-1's usual limits until the manager tells its own
    size_t vallen_max = 1024;
    Pmi1PortLaunch port;  // the PMI_PORT connection, once made (fd >= 0)
};

std::mutex &serial() {
    static std::mutex *m = new std::mutex;  // never destroyed: the exit handler takes it
    return *m;
}

Client &client() {
    static Client *c = new Client;
    return *c;
}

// One line from the manager, read a byte at a time so that nothing after it is taken from
// the socket (an MPI in this process may be the next to read it).
std::string read_line(int fd, const Deadline &deadline, const std::string &awaited) {
    std::string line;
    for (;;) {
        char c = 0;
        ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
        if (n == 1) {
            if (c == '\n') return line;
            line += c;
            if (line.size() > kMaxAnswer)
                throw Error(HVD_ERR_TRANSPORT,
                            strprintf("the process manager's answer on PMI_FD %d is longer than "
                                      "%zu bytes",
                                      fd, kMaxAnswer));
            continue;
        }
        if (n == 0)
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("the process manager closed PMI_FD %d (waiting for %s)", fd,
                                  awaited.c_str()));
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("reading PMI_FD %d: %s", fd, std::strerror(errno)));
        if (deadline.expired())
            throw Error(
                HVD_ERR_TIMED_OUT,
                strprintf("no %s from the process manager before the timeout%s", awaited.c_str(),
                          awaited == "barrier_out" ? " (not every rank of the job reached hvd_init)"
                                                   : ""));
        wait_readable(fd, deadline, 100);
    }
}

// An answer for messages: its command, rc and msg (never a value, which may be a secret).
std::string describe(const Fields &f, const std::string &raw) {
    if (f.empty()) return "'" + raw.substr(0, std::min<size_t>(80, raw.find(" value="))) + "'";
    std::string text = "cmd=" + f.at("cmd");
    for (const char *key : {"rc", "msg"})
        if (f.count(key) != 0) text += std::string(" ") + key + "=" + f.at(key);
    return text;
}

// Sends one command and reads its answer, which must be `expect` with rc=0 where it has one.
Fields command(int fd, const std::string &name, const std::string &line, const std::string &expect,
               const Deadline &deadline) {
    send_all(fd, line, deadline, "PMI_FD " + std::to_string(fd));
    const std::string raw = read_line(fd, deadline, expect);
    Fields f;
    if (!pmi1_parse(raw, &f)) f.clear();
    if (f.empty() || f["cmd"] != expect)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("PMI-1 %s: the process manager answered %s, "
                              "not %s",
                              name.c_str(), describe(f, raw).c_str(), expect.c_str()));
    auto rc = f.find("rc");
    if (rc != f.end() && rc->second != "0")
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("PMI-1 %s failed: %s", name.c_str(), describe(f, raw).c_str()));
    return f;
}

// An integer in [lo, hi] that is the whole of `text`, else -1.
int64_t whole_number(const std::string &text, int64_t lo, int64_t hi) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
        text.size() > 18)
        return -1;
    const int64_t v = std::strtoll(text.c_str(), nullptr, 10);
    return v >= lo && v <= hi ? v : -1;
}

size_t limit_of(const Fields &f, const char *key, size_t fallback) {
    auto it = f.find(key);
    const int64_t v = it == f.end() ? -1 : whole_number(it->second, 1, INT64_MAX);
    return v > 0 ? static_cast<size_t>(v) : fallback;
}

// Whether fd is still the socket init was sent on, in the process that sent it.
bool same_connection(const Client &c) {
    struct stat st;
    return c.fd >= 0 && ::getpid() == c.pid && ::fstat(c.fd, &st) == 0 && st.st_dev == c.dev &&
           st.st_ino == c.ino;
}

void finalize_at_exit() {
    // A thread still inside an exchange holds the lock: then it is no moment to talk.
    std::unique_lock<std::mutex> lock(serial(), std::try_to_lock);
    if (!lock.owns_lock()) return;
    Client &c = client();
    // A forked child, or a descriptor an MPI closed (finalizing itself) and the number reused:
    // not this process's connection to tell.
    if (!same_connection(c)) return;
    try {
        command(c.fd, "finalize", pmi1_line("finalize"), "finalize_ack",
                Deadline::after_ms(kFinalizeWaitMs));
    } catch (const Error &) {
        // The manager is gone or already done with this process: nothing left to tell it.
    }
}

// Introduces the process to the manager on `fd` (once per process).
void introduce(int fd, const Deadline &deadline) {
    Client &c = client();
    if (c.fd >= 0 && c.fd != fd)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("PMI_FD changed from %d to %d in this process", c.fd, fd));
    if (c.ready) return;
    struct stat st;
    if (::fstat(fd, &st) != 0)
        throw Error(HVD_ERR_TRANSPORT, strprintf("PMI_FD %d is not an open file descriptor: %s", fd,
                                                 std::strerror(errno)));
    int type = 0;
    socklen_t len = sizeof type;
    if (!S_ISSOCK(st.st_mode) || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM)
        throw Error(HVD_ERR_TRANSPORT, strprintf("PMI_FD %d is not a stream socket", fd));
    // Once init is sent the manager expects a finalize before the process exits, answered or
    // not.
    c.fd = fd;
    c.pid = ::getpid();
    c.dev = st.st_dev;
    c.ino = st.st_ino;
    std::atexit(finalize_at_exit);
    command(fd, "init", pmi1_line("init", {{"pmi_version", "1"}, {"pmi_subversion", "1"}}),
            "response_to_init", deadline);
    Fields maxes = command(fd, "get_maxes", pmi1_line("get_maxes"), "maxes", deadline);
    c.keylen_max = limit_of(maxes, "keylen_max", c.keylen_max);
    c.vallen_max = limit_of(maxes, "vallen_max", c.vallen_max);
    Fields name =
        command(fd, "get_my_kvsname", pmi1_line("get_my_kvsname"), "my_kvsname", deadline);
    c.kvsname = name["kvsname"];
    if (c.kvsname.empty())
        throw Error(HVD_ERR_TRANSPORT, "PMI-1 get_my_kvsname: the process manager named none");
    c.ready = true;
}

RendezvousEndpoint exchange(int32_t rank, int fd, const RendezvousEndpoint &mine, uint64_t round,
                            const Deadline &deadline) {
    introduce(fd, deadline);
    const Client &c = client();
    const std::string key = "hvd-rdv-" + std::to_string(round);
    std::string put_failure;
    if (rank == 0) {
        const std::string value = pmi1_value_text(endpoint_text(mine));
        // The manager's limits count the terminating NUL.
        if (key.size() >= c.keylen_max) {
            put_failure = strprintf("the key %s is longer than the process manager takes (%zu)",
                                    key.c_str(), c.keylen_max - 1);
        } else if (value.size() >= c.vallen_max) {
            put_failure = strprintf(
                "rank 0's entry (%zu bytes) is longer than the process "
                "manager takes (%zu)",
                value.size(), c.vallen_max - 1);
        } else {
            try {
                command(fd, "put",
                        pmi1_line("put", {{"kvsname", c.kvsname}, {"key", key}, {"value", value}}),
                        "put_result", deadline);
            } catch (const Error &e) {
                if (e.status() == HVD_ERR_TIMED_OUT) throw;
                // Rank 0 joins the barrier even so: the others then fail at once, finding no
                // entry, instead of waiting for it until their timeout.
                put_failure = e.what();
            }
        }
    }
    command(fd, "barrier", pmi1_line("barrier_in"), "barrier_out", deadline);
    if (!put_failure.empty()) throw Error(HVD_ERR_TRANSPORT, put_failure);
    if (rank == 0) return mine;
    Fields got;
    try {
        got = command(fd, "get", pmi1_line("get", {{"kvsname", c.kvsname}, {"key", key}}),
                      "get_result", deadline);
    } catch (const Error &e) {
        if (e.status() == HVD_ERR_TIMED_OUT) throw;
        throw Error(HVD_ERR_TRANSPORT,
                    std::string(e.what()) +
                        " (rank 0 could not publish its entry, or it is not PMI rank 0)");
    }
    std::string text;
    RendezvousEndpoint ep;
    if (!pmi1_value_bytes(got["value"], &text) || !parse_endpoint_text(text, &ep))
        throw Error(HVD_ERR_TRANSPORT, "rank 0's entry is malformed");
    return ep;
}

// The manager's "cmd=set <key>=<value>" lines after initack: size, rank and debug, in any order.
void read_identity(int fd, const Deadline &deadline, Pmi1PortLaunch *out) {
    for (int i = 0; i < 3; ++i) {
        const std::string raw = read_line(fd, deadline, "set");
        Fields f;
        if (!pmi1_parse(raw, &f) || f["cmd"] != "set")
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("PMI-1 initack: the process manager answered %s, not cmd=set",
                                  describe(f, raw).c_str()));
        if (f.count("size") != 0)
            out->size = static_cast<int32_t>(whole_number(f["size"], 1, INT32_MAX));
        if (f.count("rank") != 0)
            out->rank = static_cast<int32_t>(whole_number(f["rank"], 0, INT32_MAX - 1));
    }
    if (out->size < 1 || out->rank < 0 || out->rank >= out->size)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("PMI-1 initack: the process manager gave rank %d of size %d",
                              out->rank, out->size));
}

}  // namespace

Pmi1PortLaunch connect_pmi1_port(const std::string &port_text, const std::string &id_text,
                                 const Deadline &deadline) {
    std::lock_guard<std::mutex> lock(serial());
    Client &c = client();
    if (c.port.fd >= 0) return c.port;
    const size_t colon = port_text.rfind(':');
    const int64_t port =
        colon == std::string::npos ? -1 : whole_number(port_text.substr(colon + 1), 1, 65535);
    if (colon == 0 || port < 0)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("PMI_PORT=%s is not host:port", port_text.c_str()));
    const int64_t id = whole_number(id_text, 0, INT32_MAX);
    if (id < 0)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("PMI_ID=%s is not a process id of the job", id_text.c_str()));
    try {
        Fd sock = connect_tcp(port_text.substr(0, colon), static_cast<int>(port), deadline);
        command(sock.get(), "initack", pmi1_line("initack", {{"pmiid", id_text}}), "initack",
                deadline);
        Pmi1PortLaunch got;
        read_identity(sock.get(), deadline, &got);
        got.fd = sock.release();  // kept for the process's life, as PMI_FD is
        c.port = got;
        return got;
    } catch (const Error &e) {
        throw Error(e.status(), strprintf("connecting to the launcher's PMI-1 server at "
                                          "PMI_PORT=%s as PMI_ID=%s: %s",
                                          port_text.c_str(), id_text.c_str(), e.what()));
    }
}

RendezvousEndpoint exchange_rendezvous_pmi1(int32_t rank, int fd, const RendezvousEndpoint &mine,
                                            uint64_t round, const Deadline &deadline) {
    std::lock_guard<std::mutex> lock(serial());
    Client &c = client();
    try {
        if (!c.broken.empty())
            throw Error(HVD_ERR_TRANSPORT,
                        "an earlier rendezvous through it failed, leaving its state unknown (" +
                            c.broken + ")");
        try {
            return exchange(rank, fd, mine, round, deadline);
        } catch (const Error &e) {
            // An answer may still be on its way, a barrier half entered: nothing said on the
            // socket from here would be understood.
            if (c.fd >= 0) c.broken = e.what();
            throw;
        }
    } catch (const Error &e) {
        throw Error(e.status(), strprintf("rank %d: rendezvous through the launcher's PMI-1 server "
                                          "(PMI_FD %d): %s",
                                          rank, fd, e.what()));
    }
}

}  // namespace hvd::bootstrap
