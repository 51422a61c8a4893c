// SPDX-License-Identifier: Apache-2.0
// What each rank publishes about its transport at init (its address and its network interface
// toward other hosts), and the reachability check of a job spanning hosts, whose failure names
// the ranks, hosts, addresses and interfaces of both ends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "topology/network.h"
#include "transport/reachability.h"
#include "transport/transport.h"

namespace hvd::engine {

struct TransportEntry {
    std::string address;         // the transport's own address bytes
    topology::NetInterface nic;  // the rank's interface toward other hosts
};

// "<address in hex> <interface or -> <IPv4 address or ->".
std::string format_transport_entry(const TransportEntry &entry);
// The reverse; false for a malformed entry.
bool parse_transport_entry(const std::string &text, TransportEntry *entry);

// Throws Error(HVD_ERR_TRANSPORT) naming this rank and the peers in `bad` with their hosts,
// addresses and interfaces (hosts[r] and entries[r]) and why: "rank 0 (host a, 10.0.0.1 on
// eth1) cannot reach rank 4 (host c, 10.0.0.3 on eth1): no answer within hvd_init's 10.0 s
// (HVD_START_TIMEOUT); ...". timeout_ms: hvd_init's timeout.
[[noreturn]] void throw_unreachable(int32_t rank, const std::vector<std::string> &hosts,
                                    const std::vector<TransportEntry> &entries,
                                    const std::vector<transport::Unreachable> &bad,
                                    int64_t timeout_ms);

// Runs transport::unreachable_peers until `deadline` (the end of hvd_init's timeout_ms) and
// throws as throw_unreachable when a peer did not answer.
void require_reachable(transport::Transport &t, const std::vector<std::string> &hosts,
                       const std::vector<TransportEntry> &entries, int64_t timeout_ms,
                       const Deadline &deadline);

}  // namespace hvd::engine
