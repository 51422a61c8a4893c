// Single-host rendezvous without an address from the launcher (mpirun, srun on one node):
// rank 0 publishes "addr port secret" in a private file named by the job id; the other ranks
// poll for it. The file is created 0600 and renamed into place, so a reader never sees half
// a file and other users never see the secret. A reader accepts only a file owned by its own
// user and unreadable by others, so another user cannot plant an endpoint of their own.
#pragma once

#include <string>

#include "common/deadline.h"

namespace hvd::bootstrap {

struct RendezvousEndpoint {
    std::string addr;
    int port = 0;
    std::string secret;
};

// $TMPDIR (or /tmp) + "/hvd-rdv-<uid>-<sanitised job id>". Characters other than
// [A-Za-z0-9._-] become '_'; when that changed the id, or it is longer than 64 characters,
// a hash of the whole id is appended so distinct ids keep distinct files.
std::string rendezvous_file_path(const std::string &job_id);

// Writes the file (replacing a stale one). addr and secret must be non-empty and contain no
// whitespace; port in 1..65535 (else HVD_ERR_INVALID_ARG). Throws
// hvd::Error(HVD_ERR_TRANSPORT) on I/O error, naming the path.
void publish_rendezvous(const std::string &job_id, const RendezvousEndpoint &ep);

// Polls (every 10 ms) until the file exists and parses, or the deadline (HVD_ERR_TIMED_OUT
// naming the path). A file with wrong ownership or permissions is ignored with a warning.
RendezvousEndpoint lookup_rendezvous(const std::string &job_id, const Deadline &deadline);

// Removes the file if present; never throws.
void remove_rendezvous(const std::string &job_id);

}  // namespace hvd::bootstrap
