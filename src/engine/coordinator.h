// The coordinator of Horovod's negotiation (runs on rank 0's engine thread): it learns which
// ranks are ready for which named op, and once a name is ready on every rank it checks that
// they agree and emits one Response for it. Responses are numbered in emission order, which
// every rank then follows, so ranks may enqueue in different orders without deadlock.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/op_meta.h"

namespace hvd::engine {

class Coordinator {
  public:
    explicit Coordinator(int32_t size) : size_(size) {}

    // Records that `rank` is ready for these ops; appends the responses that became complete.
    void add_ready(int32_t rank, const std::vector<OpMeta> &metas, std::vector<Response> *out);

    // Names still waiting, with the ranks that have not reported them (stall inspection).
    struct Waiting {
        std::string name;
        std::vector<int32_t> missing_ranks;
        std::chrono::steady_clock::time_point since;
    };
    std::vector<Waiting> waiting() const;

  private:
    struct Pending {
        std::vector<std::optional<OpMeta>> by_rank;
        int32_t count = 0;
        std::chrono::steady_clock::time_point since;
    };
    Response complete(const std::string &name, Pending &p);

    int32_t size_;
    uint32_t next_seq_ = 1;
    std::map<std::string, Pending> pending_;
};

// Checks that every rank's description of one op agrees. Returns "" when it does, else a
// message naming the ranks and what differs, e.g.
// "allreduce 'w': rank 1 has shape [4,3], rank 0 has shape [4,2]".
std::string validate_op(const std::vector<OpMeta> &by_rank);

}  // namespace hvd::engine
