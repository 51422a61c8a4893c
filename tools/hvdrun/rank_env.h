// SPDX-License-Identifier: Apache-2.0
// The variables hvdrun gives each rank: who it is (HVD_RANK and friends), where the
// rendezvous is, the job's secret, and the user's -x exports.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hosts.h"

namespace hvdrun {

using EnvVar = std::pair<std::string, std::string>;

// What every rank of one job shares.
struct JobIdentity {
    std::string rdv_addr;
    int rdv_port = 0;
    std::string secret;  // 64 hex digits (32 random bytes), fresh per job
    std::string job_id;  // 16 hex digits, fresh per job
};

// `nbytes` bytes from getrandom(), hex-encoded. Throws std::runtime_error if the kernel
// cannot supply them.
std::string random_hex(size_t nbytes);

// Where ranks reach rank 0's rendezvous: `explicit_addr` if given; 127.0.0.1 when every rank
// is local; this machine's name when rank 0 is local but others are remote; else rank 0's host.
std::string choose_rendezvous_addr(const std::string &explicit_addr,
                                   const std::vector<Placement> &ranks,
                                   const std::string &this_host);

// The ports the kernel hands out by itself (to connect() without bind, to bind on port 0):
// net.ipv4.ip_local_port_range read from `path`, 32768-60999 when it cannot be read.
struct PortRange {
    int lo = 32768;
    int hi = 60999;
};
PortRange local_port_range(const char *path = "/proc/sys/net/ipv4/ip_local_port_range");

// A TCP port that is free now, for rank 0 of the library to listen on: a random port outside
// local_port_range() (from 10000 up) that binds on `addr`, so that no other process's outgoing
// connection can take it as its local port before rank 0 binds it, or after a restart of the
// library in the same job; the kernel's choice when none binds. When `addr` is not an address
// of this machine (rank 0 is remote, or its name does not resolve here) the wildcard address is
// used instead: the port is then only likely to be free on the remote host. Throws
// std::runtime_error when no socket can be bound at all.
int pick_free_port(const std::string &addr);

// A free port chosen as pick_free_port() does, for a rank 0 on this machine, and a socket that
// keeps it from other jobs: bound (not listening) where rank 0's rendezvous server listens
// (`addr` if it is a loopback address, else every IPv4 interface), first without SO_REUSEADDR
// so that the port was free, then with it set. Another launcher's test bind (without the
// option) then fails on the port for as long as hvdrun keeps the socket, while rank 0's
// server (which sets the option) binds and listens beside it, in every session of the job;
// nothing is passed to the rank. fd is close-on-exec; fd -1 and port 0 when nothing could be
// bound (the caller then falls back to pick_free_port).
struct ReservedPort {
    int port = 0;
    int fd = -1;
};
ReservedPort reserve_rendezvous_port(const std::string &addr);

// HVD_RANK, HVD_SIZE, HVD_LOCAL_*, HVD_CROSS_*, HVD_HOSTNAME, HVD_RENDEZVOUS_*, HVD_SECRET,
// HVD_JOB_ID for one rank.
std::vector<EnvVar> rank_variables(const Placement &p, int size, const JobIdentity &job);

// Where a worker of an elastic job reaches hvdrun's membership service, and who it is.
struct ElasticWorker {
    int id = 0;
    std::string host;
    std::string service_addr;
    int service_port = 0;
    double timeout_seconds = 0;  // how long its hvd_init waits for a round
};

// HVD_WORKER_ID, HVD_ELASTIC_ADDR/PORT/TIMEOUT, HVD_HOSTNAME, HVD_SECRET, HVD_JOB_ID for one
// worker of an elastic job: no rank or size, which each round assigns.
std::vector<EnvVar> worker_variables(const ElasticWorker &w, const JobIdentity &job);

// Resolves -x entries: NAME=VALUE as given, NAME from `lookup` (getenv-like). A NAME that is
// unset is skipped and reported in *unset so the caller can warn.
std::vector<EnvVar> resolve_exports(const std::vector<std::string> &exports,
                                    const std::function<const char *(const char *)> &lookup,
                                    std::vector<std::string> *unset);

}  // namespace hvdrun
