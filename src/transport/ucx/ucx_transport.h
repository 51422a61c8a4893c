// The UCX (UCP) implementation of Transport: one UCP context and worker per libhvd context,
// tagged messages, endpoints in error-handling mode PEER. UCX picks shared memory (posix /
// sysv / cma) between ranks of one host and TCP or RDMA between hosts.
#pragma once

#include <memory>

#include "transport/transport.h"

namespace hvd::transport {

// Creates the UCP context and worker. Throws hvd::Error(HVD_ERR_TRANSPORT) with UCX's message.
std::unique_ptr<Transport> make_ucx_transport(int32_t rank, int32_t size);

// Connects a set of transports living in one process (tests: N ranks as N threads): gathers
// their addresses and calls connect() on each.
void connect_local_transports(const std::vector<Transport *> &transports);

}  // namespace hvd::transport
