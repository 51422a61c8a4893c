// SPDX-License-Identifier: Apache-2.0
// The waits of the shared-memory collectives, bound to one call's Comm: each failure is
// reported with the algorithm, the rank waited for and what it was expected to do, and ends
// the transport's operations like every other collective's failure.
#pragma once

#include <cstddef>

#include "collectives/comm.h"
#include "shm/shm_group.h"

namespace hvd::collectives {

class ShmSync {
  public:
    // The waits drive comm's transport where its completed sends may still need it (a job
    // across hosts: see Transport::sends_need_progress).
    ShmSync(const Comm &comm, const char *algorithm)
        : comm_(comm),
          group_(*comm.shm),
          algorithm_(algorithm),
          drive_(comm.transport_to_drive()) {}

    shm::Group &group() const { return group_; }
    const Comm &comm() const { return comm_; }
    int32_t me() const { return comm_.my_index; }

    // Starts the next round: waits until this member's slot half for it is free, and stamps it
    // with this collective's seq.
    hvd_status_t begin(uint64_t *round);
    // Waits until every other member's counter c reached `round`; what: what they were doing.
    // For kReady, also checks that they are in this collective (their stamp): members out of
    // step fail with HVD_ERR_INTERNAL instead of reading each other's unrelated data.
    hvd_status_t all(shm::Counter c, uint64_t round, const char *what);
    // Waits for one member.
    hvd_status_t one(int32_t member, shm::Counter c, uint64_t round, const char *what);
    // A failure inside a round (peers are waiting on this member): HVD_ERR_INTERNAL, which
    // ends the context, with `what` and the cause.
    hvd_status_t fatal(hvd_status_t cause, const char *what) const;
    void post(shm::Counter c, uint64_t round) { group_.post(c, round); }

    // Single copy: this member publishes where its block lives (in its slot for `round`,
    // before posting kReady); another member, having seen that kReady, copies bytes
    // [offset, offset + len) of it straight from this member's process (fetch) or into it
    // (deliver). The published length must be `total` (members agree on sizes).
    void publish(uint64_t round, const void *addr, size_t len);
    hvd_status_t fetch(int32_t member, uint64_t round, size_t offset, void *dst, size_t len,
                       size_t total) {
        return copy(member, round, offset, dst, len, total, false);
    }
    hvd_status_t deliver(int32_t member, uint64_t round, size_t offset, const void *src, size_t len,
                         size_t total) {
        return copy(member, round, offset, const_cast<void *>(src), len, total, true);
    }
    // A round in which every member reads the others' data by single copy: starts it,
    // publishes this member's (addr, len) and waits until every member has published theirs.
    hvd_status_t publish_to_all(const void *addr, size_t len, uint64_t *round);
    // Ends it: this member has read what it needs; returns once every member has, so this
    // member's published data stays untouched while others read it.
    hvd_status_t end_reads(uint64_t round);

  private:
    hvd_status_t failed(hvd_status_t s, int32_t laggard, const char *what) const;
    hvd_status_t check_stamp(int32_t member, uint64_t round) const;
    hvd_status_t copy(int32_t member, uint64_t round, size_t offset, void *local, size_t len,
                      size_t total, bool to_remote);

    const Comm &comm_;
    shm::Group &group_;
    const char *algorithm_;
    transport::Transport *drive_;
};

// Elements [first, first + count) of `total` that member `index` of n handles when a chunk is
// split among members: equal shares of whole 64-byte lines (the last share takes the rest).
struct Share {
    size_t first;
    size_t count;
};
Share share_of(size_t total, size_t element_bytes, int32_t n, int32_t index);

// dst = part(0) op part(1) op ... over `count` elements at byte offset `at`, where part(m) is
// member m's slot of `round`, or `own` for this member (its data may stay in its input). The
// steps before the last (groups of three members or more) store their sums in `acc`, which
// must not overlap any part; the last step stores the result in dst, which may be `acc` or
// `own` or overlap no part, and with `copy` also there (copy may be `own`, or overlap no part
// nor dst). The last step stores the result scaled by `scale` (1.0: as reduced). A group of
// one member has nothing to reduce. Errors: the reduction's (HVD_ERR_UNSUPPORTED for a dtype
// or op it lacks).
hvd_status_t reduce_parts(const shm::Group &g, uint64_t round, size_t at, const char *own,
                          void *acc, void *dst, void *copy, size_t count, int32_t dtype, int32_t op,
                          double scale);

// The shared-memory algorithms (single host, comm.shm set; same contracts as the dispatching
// allreduce / allgatherv / broadcast in collectives.h). Up to the group's one_shot_max_bytes()
// an allreduce stages the whole buffer once and every member reduces all of it; above, chunks
// of the slot size are reduced one share per member.
hvd_status_t allreduce_shm(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op);

// Several tensors reduced as one buffer (their concatenation), read from `in` and written to
// `out` of each piece without a fusion buffer: the slots are the only staging. Pieces hold
// whole elements of dtype; a piece's in and out are equal or do not overlap. Same contract as
// allreduce_shm otherwise. The results are stored scaled by `scale` as reduce::scale_into
// scales (Average's 1 / size and a postscale, folded into the reduction's last store); 1.0
// stores them as reduced.
struct Piece {
    const void *in;
    void *out;
    size_t bytes;
};
hvd_status_t allreduce_shm_pieces(Comm &comm, const Piece *pieces, size_t n_pieces, int32_t dtype,
                                  int32_t op, double scale);

// ---- The mapped path of the chunked allreduce (allreduce_shm_mapped.cc): when every member's
// pieces (each one's in and out) lie in hvd_mem_alloc regions, each member reduces its share
// straight from all members' inputs into all members' outputs. No slots, no staging.

// In the first round of a chunked allreduce of `bytes` while group().mapped(bytes): marks
// whether all of this member's pieces lie in regions, and if so writes where into its slot
// half and returns true (the member then stages nothing that round). Before posting kReady.
bool offer_mapped(ShmSync &sync, uint64_t round, const Piece *pieces, size_t n_pieces,
                  size_t bytes);
// After every member's kReady of that round: how many members offered.
int32_t count_offers(const ShmSync &sync, uint64_t round);
// Every member offered: the whole allreduce, in place in the members' regions. Ends the round:
// returns once every member has written its share everywhere, or with *dropped set (nothing
// written) when some member could not map the others' buffers: then redo it through the slots.
// The results are stored scaled by `scale`, as allreduce_shm_pieces stores them.
hvd_status_t allreduce_mapped(ShmSync &sync, uint64_t round, const Piece *pieces, size_t n_pieces,
                              size_t bytes, int32_t dtype, int32_t op, double scale, bool *dropped);
// Reduce-scatter through the slots (same contract as reducescatter in collectives.h: member
// r ends with the reduction of block r, out may be exactly its place in `in`). Each round
// takes the next piece of every block, as much of each as a slot half holds divided by the
// members: every member copies the other members' pieces into its slot, then reduces its own
// block's piece from its input and the others' slots, in member order, into its output.
// Each byte is copied once and read once more; no member gathers the others' results, which
// is the part of the allreduce that a hierarchical allreduce (or a sharded optimizer)
// throws away.
hvd_status_t reducescatter_shm(Comm &comm, const void *in, void *out,
                               const std::vector<size_t> &counts, int32_t dtype, int32_t op);
hvd_status_t allgatherv_shm(Comm &comm, const void *in, void *out,
                            const std::vector<size_t> &bytes);
hvd_status_t broadcast_shm(Comm &comm, void *buf, size_t bytes, int32_t root_index);

// HVD_ERR_INVALID_ARG (logged) unless comm.shm is set and matches comm's members. Called after
// the collective's own argument check, which has validated the rest of comm.
hvd_status_t check_shm_comm(const Comm &comm, const char *algorithm);

}  // namespace hvd::collectives
