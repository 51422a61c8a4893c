// Single-host rendezvous without an address from the launcher (mpirun, srun on one node):
// rank 0 publishes "addr port secret" in a private file named by the job id; the other ranks
// poll for it. The file is created 0600 and renamed into place, so a reader never sees half
// a file and other users never see the secret.
#pragma once

#include <string>

#include "common/deadline.h"

namespace hvd::bootstrap {

struct RendezvousEndpoint {
    std::string addr;
    int port = 0;
    std::string secret;
};

// $TMPDIR (or /tmp) + "/hvd-rdv-<uid>-<sanitised job id>".
std::string rendezvous_file_path(const std::string &job_id);

// Writes the file (replacing a stale one). Throws hvd::Error(HVD_ERR_TRANSPORT) on I/O error.
void publish_rendezvous(const std::string &job_id, const RendezvousEndpoint &ep);

// Polls until the file exists and parses, or the deadline (HVD_ERR_TIMED_OUT naming the path).
RendezvousEndpoint lookup_rendezvous(const std::string &job_id, const Deadline &deadline);

// Removes the file if present; never throws.
void remove_rendezvous(const std::string &job_id);

}  // namespace hvd::bootstrap
