// SPDX-License-Identifier: Apache-2.0
// Rendezvous through the launcher's PMI-1 server, for jobs that MPICH's Hydra (mpiexec, also
// Intel MPI's) starts without telling libhvd where rank 0 is: Hydra hands every process a
// socket to its process manager (PMI_FD) that speaks PMI-1's wire protocol (pmi1_wire.h).
// Rank 0 puts its rendezvous server's address, port and secret under a key of the job's
// key-value space, every rank joins the manager's barrier, and the others get rank 0's
// value. The secret travels only over the launcher's own channel.
//
// No library is loaded: the protocol is a few text lines on that socket.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/rendezvous_file.h"
#include "common/deadline.h"

namespace hvd::bootstrap {

// Every rank of the job calls this once per rendezvous, with the same `round` (which names
// the key, so a process that initialises again uses a new one) and the PMI_FD it was given.
// Rank 0 passes its server's endpoint in `mine` (ignored elsewhere); each rank gets rank 0's.
// Blocks until every process of the job has entered the barrier, or the deadline
// (HVD_ERR_TIMED_OUT). The first call introduces the process to the manager (PMI-1 init),
// which then expects a PMI-1 finalize before the process exits: it is sent when the process
// exits (waiting at most 5 s for the answer), by the process that sent init and only while
// the descriptor is still that socket. The socket is never closed, so that an MPI in the same
// process can use it too. Thread safety: one call at a time per process (serialised inside).
// Errors (hvd::Error, naming the rank): HVD_ERR_TRANSPORT when PMI_FD is no stream socket, the
// socket fails or closes, or the manager refuses a command or answers out of protocol (naming
// the command and the answer), HVD_ERR_TIMED_OUT. After a failure the protocol's state is
// unknown: later calls in the process fail at once with HVD_ERR_TRANSPORT, saying so.
RendezvousEndpoint exchange_rendezvous_pmi1(int32_t rank, int fd, const RendezvousEndpoint &mine,
                                            uint64_t round, const Deadline &deadline);

// MPICH Hydra's PMI_PORT model (mpiexec -pmi-port): instead of PMI_FD, PMI_RANK and PMI_SIZE a
// process gets PMI_PORT ("host:port" of its process manager) and PMI_ID; it connects there,
// introduces itself by that id and is told its rank and size. The socket then serves
// exchange_rendezvous_pmi1 as PMI_FD's does, and like it is never closed.
struct Pmi1PortLaunch {
    int fd = -1;
    int32_t rank = -1;
    int32_t size = 0;
};

// Connects to the manager named by port_text (PMI_PORT) as id_text (PMI_ID), once per process:
// later calls return the same connection and numbers. Blocks until the manager answers or the
// deadline. Thread safety: serialised with exchange_rendezvous_pmi1. Errors (hvd::Error):
// HVD_ERR_INVALID_ARG (a malformed PMI_PORT or PMI_ID), HVD_ERR_TIMED_OUT (no connection or
// answer in time), HVD_ERR_TRANSPORT (the connection fails or the manager answers out of
// protocol, named).
Pmi1PortLaunch connect_pmi1_port(const std::string &port_text, const std::string &id_text,
                                 const Deadline &deadline);

}  // namespace hvd::bootstrap
