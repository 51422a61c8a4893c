// SPDX-License-Identifier: Apache-2.0
// The coordinator of Horovod's negotiation (runs on rank 0's engine thread, for every
// process set): it learns which ranks are ready for which named op, and once a name is ready
// on every member of its set it checks that they agree and emits one Response. Responses of
// all sets are numbered in one global order, which every rank follows for the sets it is in:
// ranks may enqueue in different orders, and two sets sharing ranks cannot deadlock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "negotiation/op_meta.h"

namespace hvd::negotiation {

class Coordinator {
  public:
    explicit Coordinator(int32_t size);

    // Records that global rank `rank` is ready for these ops; appends the responses that
    // became complete. A rank reporting for a set it is not in, or for an unknown set, gets an
    // error response of its own.
    void add_ready(int32_t rank, const ReadyReport &report, std::vector<Response> *out);

    // Members (global ranks) of a set the coordinator knows; empty if unknown.
    const std::vector<int32_t> &members(uint16_t set_id) const;

    // Names still waiting, with the global ranks that have not reported them.
    struct Waiting {
        uint16_t set_id;
        std::string name;
        std::vector<int32_t> missing_ranks;
        std::chrono::steady_clock::time_point since;
    };
    std::vector<Waiting> waiting() const;

    // Gives up on a waiting op: every member that reported it gets `status` and `message`
    // (responses addressed to each), and the op is forgotten.
    void expire(uint16_t set_id, const std::string &name, int32_t status,
                const std::string &message, std::vector<Response> *out);

  private:
    struct Pending {
        std::vector<std::optional<OpMeta>> by_member;
        int32_t count = 0;
        uint64_t after_round = 0;
        std::chrono::steady_clock::time_point since;
    };
    using Key = std::pair<uint16_t, std::string>;

    // Emits every pending op of the set that the members who have not joined all reported.
    void complete_ready(uint16_t set_id, const Key *touched, std::vector<Response> *out);
    std::map<Key, Pending>::iterator try_complete(std::map<Key, Pending>::iterator it,
                                                  const std::vector<bool> *joined,
                                                  std::vector<Response> *out, bool *join_done);
    static bool rejected(const std::vector<OpMeta> &metas, const std::vector<int32_t> &ranks,
                         Response *resp);
    Response complete(const Key &key, Pending &p);
    Response complete_with_joined(const Key &key, std::vector<OpMeta> &metas,
                                  const std::vector<int32_t> &ranks, const Pending &p);
    void apply_membership(Response &resp, const OpMeta &meta);
    static void describe_tensor(Response &resp, const OpMeta &m);
    static void choose_device_path(Response &resp, const std::vector<OpMeta> &metas,
                                   bool some_joined);
    int32_t member_index(uint16_t set_id, int32_t rank) const;

    // Sequence numbers of negotiated ops: 1 .. kNegotiatedSeqLimit, then again from 1.
    uint32_t take_seq();
    uint32_t next_seq_ = 1;
    uint16_t next_set_id_ = 1;
    std::map<uint16_t, std::vector<int32_t>> sets_;  // set id -> members
    std::map<Key, Pending> pending_;
    // Grouped ops: responses held back until every op of their group is ready.
    void emit(Response resp, const std::string &group, int32_t group_size,
              std::vector<Response> *out);
    std::map<Key, std::vector<Response>> held_;  // (set, group) -> ready members
    // Join: members (indices) of each set that have joined, and the last one to join.
    std::map<uint16_t, std::vector<bool>> joined_;
    std::map<uint16_t, int32_t> last_joined_;
};

// Checks that every member's description of one op agrees. Returns "" when it does, else a
// message naming the ranks and what differs, e.g.
// "allreduce 'w': rank 1 has shape [4,3], rank 0 has shape [4,2]". ranks[i] is the global
// rank of by_member[i].
std::string validate_op(const std::vector<OpMeta> &by_member, const std::vector<int32_t> &ranks);

// The sizes of an op whose members agree (validate_op): every member's tensor has no
// negative dimension and a size in bytes that fits in 64 bits (each rank checks its own at
// enqueue; here they come from other ranks), and so has what the op puts together from
// several members: an allgather's output (the sum of the first dimensions), the rows each
// member of an alltoall receives (whose splits are checked too). Returns "" when they fit,
// else a message naming the op, e.g. "allgather 'x': the first dimensions of ranks [0,1]
// ([4611686018427387904,4611686018427387904]) add up to more rows than a 64-bit integer
// holds".
std::string check_sizes(const std::vector<OpMeta> &by_member, const std::vector<int32_t> &ranks);

// Allgathers into caller-owned outputs: every such output has as many rows as all members'
// inputs together, and an input inside its output starts at the rows of the members before
// it (in place). Returns "" when that holds, else a message naming the rank, e.g.
// "allgather 'x': rank 1's output has 6 rows, the inputs of ranks [0,1,2] add up to 7".
std::string check_gather_outputs(const std::vector<OpMeta> &by_member,
                                 const std::vector<int32_t> &ranks,
                                 const std::vector<int64_t> &first_dims);

}  // namespace hvd::negotiation
