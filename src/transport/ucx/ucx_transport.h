// SPDX-License-Identifier: Apache-2.0
// The UCX (UCP) implementation of Transport: one UCP context and worker per libhvd context,
// tagged messages, endpoints in error-handling mode PEER. UCX picks shared memory (posix /
// sysv / cma) between ranks of one host and TCP or RDMA between hosts.
#pragma once

#include <memory>
#include <string>

#include "transport/transport.h"

namespace hvd::transport {

// Creates the UCP context and worker. Throws hvd::Error(HVD_ERR_TRANSPORT) with UCX's message.
// single_host: every peer is on this host; then, unless UCX_RNDV_THRESH is set, messages
// below kSingleHostRndvThresh go eagerly through shared memory instead of UCX's rendezvous
// (measured faster for 32 and 64 KiB allreduces of 2 ranks). Not higher:
// with 256K, UCX 1.13 hit an assertion purging pending eager sends when a peer died
// mid-transfer (mp.peer_killed_midway.np3, 4 of 61 runs; 0 of 65 with 128K).
// Not single_host: unless UCX_TCP_TX_SEG_SIZE or UCX_TCP_RX_SEG_SIZE is set, both are set in
// the process's environment (UCX reads them only there) to kTcpSegSize, so UCX's TCP
// transport sends and receives in 256K segments instead of 8K / 64K: fewer system calls and
// headers per byte (3 namespace hosts x 2 ranks: 64 KiB-16 MiB allreduces 1.1-1.4x faster).
// Like UCX_TCP_CONN_NB=y, which is set there too, they stay for the process's later UCX users.
// net_devices: UCX's network devices (HVD_IFACE), unless UCX_NET_DEVICES is set (which wins,
// with a warning when they differ); "": UCX's choice.
std::unique_ptr<Transport> make_ucx_transport(int32_t rank, int32_t size, bool single_host = false,
                                              const std::string &net_devices = "");
constexpr const char *kSingleHostRndvThresh = "128K";
constexpr const char *kTcpSegSize = "256K";

// Connects a set of transports living in one process (tests: N ranks as N threads): gathers
// their addresses and calls connect() on each.
void connect_local_transports(const std::vector<Transport *> &transports);

}  // namespace hvd::transport
