// SPDX-License-Identifier: Apache-2.0
#include "rank_env.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "bootstrap/loopback.h"

namespace hvdrun {
namespace {

// Binds a TCP socket to `addr` and returns the port it got (the kernel's choice when the
// address's port is 0), or -1 with errno set. With `keep`, the bound socket (close-on-exec) is
// stored there instead of closed.
int bound_port(const sockaddr *addr, socklen_t len, int *keep = nullptr) {
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_storage bound = {};
    socklen_t bound_len = sizeof(bound);
    int port = -1;
    if (bind(fd, addr, len) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &bound_len) == 0) {
        port = bound.ss_family == AF_INET6
                   ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
                   : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
    }
    int saved = errno;
    if (port > 0 && keep != nullptr) {
        *keep = fd;
    } else {
        close(fd);
    }
    errno = saved;
    return port;
}

void set_port(sockaddr_storage *addr, int port) {
    uint16_t net = htons(static_cast<uint16_t>(port));
    if (addr->ss_family == AF_INET6)
        reinterpret_cast<sockaddr_in6 *>(addr)->sin6_port = net;
    else
        reinterpret_cast<sockaddr_in *>(addr)->sin_port = net;
}

socklen_t addr_len(const sockaddr_storage &addr) {
    return addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

// The lowest port tried outside the kernel's range: below it sit well-known services.
constexpr int kLowestChosenPort = 10000;
constexpr int kChoiceAttempts = 64;

// A random port of `addr` outside `avoid` that binds now, or -1 after kChoiceAttempts ports
// in use, at the first other failure (an address that is not this machine's fails for every
// port), or when the ports outside `avoid` are too few to pick from.
int bindable_port_outside(sockaddr_storage addr, PortRange avoid, int *keep = nullptr) {
    int below = std::max(0, avoid.lo - kLowestChosenPort);
    int above = std::max(0, 65535 - avoid.hi);
    if (below + above < kChoiceAttempts) return -1;
    for (int attempt = 0; attempt < kChoiceAttempts; ++attempt) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) return -1;
        int index = static_cast<int>(r % static_cast<uint32_t>(below + above));
        int port = index < below ? kLowestChosenPort + index : avoid.hi + 1 + (index - below);
        set_port(&addr, port);
        if (bound_port(reinterpret_cast<sockaddr *>(&addr), addr_len(addr), keep) == port)
            return port;
        if (errno != EADDRINUSE) return -1;
    }
    return -1;
}

// A free port of `addr`: outside the kernel's automatic range if one binds, else the kernel's
// choice; -1 with errno set if nothing binds. With `keep`, the socket bound to it is stored
// there.
int free_port_of(const sockaddr *addr, socklen_t len, int *keep = nullptr) {
    sockaddr_storage copy = {};
    std::memcpy(&copy, addr, std::min<size_t>(len, sizeof copy));
    int port = bindable_port_outside(copy, local_port_range(), keep);
    if (port > 0) return port;
    set_port(&copy, 0);
    return bound_port(reinterpret_cast<sockaddr *>(&copy), addr_len(copy), keep);
}

int wildcard_port(int family) {
    sockaddr_storage any = {};
    any.ss_family = static_cast<sa_family_t>(family);  // address and port zero: wildcard
    return free_port_of(reinterpret_cast<sockaddr *>(&any), addr_len(any));
}

}  // namespace

PortRange local_port_range(const char *path) {
    PortRange range;
    std::ifstream in(path);
    PortRange read;
    if (in >> read.lo >> read.hi && read.lo >= 1 && read.lo <= read.hi && read.hi <= 65535)
        range = read;
    return range;
}

std::string random_hex(size_t nbytes) {
    std::string bytes(nbytes, '\0');
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(&bytes[got], nbytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
        got += static_cast<size_t>(n);
    }
    static const char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned char b : bytes) {
        hex += kDigits[b >> 4];
        hex += kDigits[b & 15];
    }
    return hex;
}

std::string choose_rendezvous_addr(const std::string &explicit_addr,
                                   const std::vector<Placement> &ranks,
                                   const std::string &this_host) {
    if (!explicit_addr.empty()) return explicit_addr;
    bool all_local = true;
    for (const Placement &p : ranks) {
        all_local = all_local && is_local_host(p.host, this_host);
    }
    if (all_local) return "127.0.0.1";
    // "localhost" would send the remote ranks to themselves.
    if (is_local_host(ranks.at(0).host, this_host)) return this_host;
    return ranks.at(0).host;
}

int pick_free_port(const std::string &addr) {
    addrinfo hints = {};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    int port = -1;
    int family = AF_INET;
    // A name this machine cannot resolve may still be rank 0's name on the remote side; the
    // wildcard fallback below covers it.
    if (getaddrinfo(addr.c_str(), nullptr, &hints, &found) == 0) {
        family = found->ai_family;
        for (addrinfo *ai = found; ai != nullptr && port < 0; ai = ai->ai_next) {
            port = free_port_of(ai->ai_addr, ai->ai_addrlen);
        }
        freeaddrinfo(found);
    }
    if (port < 0) port = wildcard_port(family);
    if (port < 0) {
        throw std::runtime_error("cannot find a free TCP port for the rendezvous on '" + addr +
                                 "': " + std::strerror(errno));
    }
    return port;
}

ReservedPort reserve_rendezvous_port(const std::string &addr) {
    // Where rank 0's server listens (engine/context.cc): a loopback address as given, else
    // every IPv4 interface.
    bool loopback = hvd::bootstrap::is_loopback_address(addr);
    addrinfo hints = {};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    hints.ai_family = loopback ? AF_UNSPEC : AF_INET;
    addrinfo *found = nullptr;
    ReservedPort r;
    if (getaddrinfo(loopback ? addr.c_str() : nullptr, "0", &hints, &found) != 0) return r;
    for (addrinfo *ai = found; ai != nullptr && r.fd < 0; ai = ai->ai_next) {
        int fd = -1;
        // Bound without SO_REUSEADDR, so no other socket holds the port; set afterwards, so
        // that rank 0's server (which sets it too) may bind and listen beside this socket.
        int port = free_port_of(ai->ai_addr, ai->ai_addrlen, &fd);
        if (port <= 0) continue;
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
            close(fd);
            continue;
        }
        r.port = port;
        r.fd = fd;
    }
    freeaddrinfo(found);
    return r;
}

std::vector<EnvVar> rank_variables(const Placement &p, int size, const JobIdentity &job) {
    return {
        {"HVD_RANK", std::to_string(p.rank)},
        {"HVD_SIZE", std::to_string(size)},
        {"HVD_LOCAL_RANK", std::to_string(p.local_rank)},
        {"HVD_LOCAL_SIZE", std::to_string(p.local_size)},
        {"HVD_CROSS_RANK", std::to_string(p.cross_rank)},
        {"HVD_CROSS_SIZE", std::to_string(p.cross_size)},
        {"HVD_HOSTNAME", p.host},
        {"HVD_RENDEZVOUS_ADDR", job.rdv_addr},
        {"HVD_RENDEZVOUS_PORT", std::to_string(job.rdv_port)},
        {"HVD_SECRET", job.secret},
        {"HVD_JOB_ID", job.job_id},
    };
}

std::vector<EnvVar> worker_variables(const ElasticWorker &w, const JobIdentity &job) {
    return {
        {"HVD_WORKER_ID", std::to_string(w.id)},
        {"HVD_ELASTIC_ADDR", w.service_addr},
        {"HVD_ELASTIC_PORT", std::to_string(w.service_port)},
        {"HVD_ELASTIC_TIMEOUT", std::to_string(static_cast<long long>(w.timeout_seconds))},
        {"HVD_HOSTNAME", w.host},
        {"HVD_SECRET", job.secret},
        {"HVD_JOB_ID", job.job_id},
    };
}

std::vector<EnvVar> resolve_exports(const std::vector<std::string> &exports,
                                    const std::function<const char *(const char *)> &lookup,
                                    std::vector<std::string> *unset) {
    std::vector<EnvVar> vars;
    for (const std::string &entry : exports) {
        size_t eq = entry.find('=');
        if (eq != std::string::npos) {
            vars.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
            continue;
        }
        const char *value = lookup(entry.c_str());
        if (value != nullptr) {
            vars.emplace_back(entry, value);
        } else {
            unset->push_back(entry);
        }
    }
    return vars;
}

}  // namespace hvdrun
