// SPDX-License-Identifier: Apache-2.0
// Single-host rendezvous without an address from the launcher (mpirun, srun on one node):
// rank 0 publishes "addr port secret" in a private file named by the job id; the other ranks
// poll for it. The file lives in a directory private to the user ($XDG_RUNTIME_DIR, else
// $TMPDIR/hvd-<uid>, 0700), so no other user can take its name first, replace it or read
// the secret; a directory that another user owns, or that lets group or others in, is never
// used. The file is created 0600 (exclusively, never through a link) and renamed into place,
// so a reader never sees half a file. A reader accepts only a regular file owned by its own
// user and unreadable by others.
#pragma once

#include <string>

#include "common/deadline.h"

namespace hvd::bootstrap {

struct RendezvousEndpoint {
    std::string addr;
    int port = 0;
    std::string secret;
};

// "addr port secret", as the file and the launchers' key-value stores hold an endpoint
// (addr and secret hold no whitespace); and back: false unless the text is exactly that,
// with a port in 1..65535 (a trailing newline allowed).
std::string endpoint_text(const RendezvousEndpoint &ep);
bool parse_endpoint_text(const std::string &text, RendezvousEndpoint *ep);

// "<dir>/hvd-rdv-<sanitised job id>". dir: $XDG_RUNTIME_DIR if it is set, absolute and a
// directory of this user's with no access for group or others; else the first of
// $TMPDIR/hvd-<uid>, $TMPDIR/hvd-<uid>.1, ... $TMPDIR/hvd-<uid>.7 (TMPDIR defaulting to /tmp)
// that is such a directory, made 0700 if absent. One that is not (a link, another user's, a
// mode with group or other bits) is skipped with a warning; every rank skips the same ones,
// so they meet in the same directory. When none will do, this and the functions below throw
// hvd::Error(HVD_ERR_TRANSPORT) naming each candidate and what is wrong with it.
// Characters of the id other than [A-Za-z0-9._-] become '_'; when that changed the id, or
// it is longer than 64 characters, a hash of the whole id is appended so distinct ids keep
// distinct files.
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
