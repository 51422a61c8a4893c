// SPDX-License-Identifier: Apache-2.0
// Rendezvous through the launcher's PMIx server, for jobs that launchers with one (Open MPI's
// mpirun, Slurm's srun --mpi=pmix) spread over hosts without telling libhvd where rank 0 is: rank 0
// puts its rendezvous server's address, port and secret under a key of the job's PMIx namespace,
// every rank joins a fence that collects the data, and the others read rank 0's value. The PMIx
// store is the launcher's own channel among the job's processes, so the secret is never on a
// command line or in a file.
//
// libpmix is loaded at run time (HVD_PMIX_LIBRARY; else the PMIx the process already has, as
// an MPI library brings it; else libpmix.so.2), so libhvd.so needs no
// PMIx to load or to run under other launchers; builds without PMIx's header
// (HVD_HAVE_PMIX unset) refuse it with HVD_ERR_UNSUPPORTED.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/rendezvous_file.h"
#include "common/deadline.h"

namespace hvd::bootstrap {

// Every rank of the job calls this once per rendezvous, with the same `round` (which names
// the key, so a process that initialises again uses a new one). Rank 0 passes its server's
// endpoint in `mine` (ignored elsewhere); each rank gets rank 0's. Blocks until every rank of
// the job's namespace has joined the fence, or the deadline (HVD_ERR_TIMED_OUT). The process
// connects to the PMIx server on the first call and stays connected until it exits (PMIx is
// not safe to start again once finalised, and an MPI in the same process shares the
// connection). Thread safety: one call at a time per process (serialised inside). Errors
// (hvd::Error, naming the rank): HVD_ERR_UNSUPPORTED when libpmix cannot be loaded or the
// build has no PMIx support (naming the library and why), HVD_ERR_TRANSPORT when a PMIx call
// fails (naming it and PMIx's message), HVD_ERR_TIMED_OUT.
RendezvousEndpoint exchange_rendezvous_pmix(int32_t rank, const RendezvousEndpoint &mine,
                                            uint64_t round, const Deadline &deadline);

}  // namespace hvd::bootstrap
