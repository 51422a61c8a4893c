// SPDX-License-Identifier: Apache-2.0
// Point-to-point waiting and failure reporting shared by every collective algorithm.
#include "collectives/comm.h"

#include "common/log.h"

namespace hvd::collectives {

namespace {

// "rank 3 (member 1 of 4, set 0, seq 17)": enough to find the call in every rank's log.
std::string identity(const Comm &comm) {
    bool index_ok = comm.my_index >= 0 && comm.my_index < comm.size();
    return strprintf("rank %d (member %d of %d, set %u, seq %u)",
                     index_ok ? comm.global_rank() : -1, comm.my_index, comm.size(),
                     static_cast<unsigned>(comm.set_id), static_cast<unsigned>(comm.seq));
}

int32_t log_rank(const Comm &comm) {
    return comm.my_index >= 0 && comm.my_index < comm.size() ? comm.global_rank() : -1;
}

}  // namespace

hvd_status_t Comm::wait(transport::Completion *c, const char *what, int32_t peer_index) const {
    transport::Completion *const cs[1] = {c};
    hvd_status_t st = transport::wait_all(*transport, cs, 1, deadline, abort_status);
    if (st != HVD_OK) {
        // wait_all has already aborted the transport's operations; only report.
        std::string peer = peer_index >= 0 ? strprintf("rank %d", members[peer_index]) : "peers";
        HVD_LOG(kWarning, log_rank(*this), "%s: %s %s failed: %s (%s)", identity(*this).c_str(),
                what, peer.c_str(), status_name(st), status_message(st));
    }
    return st;
}

hvd_status_t Comm::wait_recv(transport::Completion *c, size_t bytes, const char *what,
                             int32_t peer_index) const {
    hvd_status_t st = wait(c, what, peer_index);
    if (st != HVD_OK || c->length == bytes) return st;
    return abort_with(
        HVD_ERR_INTERNAL,
        strprintf("%s rank %d: got %zu bytes, expected %zu (members disagree on sizes)", what,
                  members[peer_index], c->length, bytes));
}

hvd_status_t Comm::wait_each(transport::Completion *cs, size_t n, const char *what,
                             int32_t peer_index) const {
    for (size_t i = 0; i < n; ++i) {
        if (cs[i].done && cs[i].status == HVD_OK) continue;
        hvd_status_t st = wait(&cs[i], what, peer_index);
        if (st != HVD_OK) return st;
    }
    return HVD_OK;
}

hvd_status_t Comm::abort_with(hvd_status_t status, const std::string &detail) const {
    if (transport != nullptr) transport->abort_all(status);
    HVD_LOG(kWarning, log_rank(*this), "%s: %s: %s", identity(*this).c_str(), detail.c_str(),
            status_name(status));
    return status;
}

hvd_status_t Comm::validate(const char *algorithm) const {
    const char *problem = nullptr;
    if (transport == nullptr) {
        problem = "no transport";
    } else if (members.empty()) {
        problem = "empty group";
    } else if (my_index < 0 || my_index >= size()) {
        problem = "own index outside the group";
    } else if (scratch == nullptr) {
        problem = "no scratch buffer";
    }
    if (problem == nullptr) return HVD_OK;
    // Nothing has been posted yet: report without aborting the transport.
    HVD_LOG(kError, log_rank(*this), "%s: %s: %s", identity(*this).c_str(), algorithm, problem);
    return HVD_ERR_INVALID_ARG;
}

}  // namespace hvd::collectives
