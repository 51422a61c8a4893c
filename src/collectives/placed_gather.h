// SPDX-License-Identifier: Apache-2.0
// Gathers in place, where every member holds a buffer of the same layout and owns some byte
// ranges of it: afterwards every member's buffer holds every member's ranges. The
// hierarchical allgather's steps are such gathers in the output itself (a host's ranks own
// their blocks, a host's share is a range of the output per rank), so no step stages a copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/comm.h"
#include "hvd/hvd.h"

namespace hvd::collectives {

struct ByteRange {
    size_t at;   // offset in the buffer
    size_t len;  // never 0 in a Ranges
};

// A member's part: ranges in order, none empty, adjacent ones merged (add_range keeps it so).
using Ranges = std::vector<ByteRange>;

inline void add_range(Ranges *ranges, size_t at, size_t len) {
    if (len == 0) return;
    if (!ranges->empty() && ranges->back().at + ranges->back().len == at)
        ranges->back().len += len;
    else
        ranges->push_back({at, len});
}

inline size_t ranges_bytes(const Ranges &ranges) {
    size_t n = 0;
    for (const ByteRange &r : ranges)
        n += r.len;
    return n;
}

// The part as one stream (its ranges one after the other): calls fn(at, from_start, len) for
// each piece of stream bytes [from, from + len), where `at` is the piece's offset in the
// buffer and from_start its offset from `from` in the stream.
template <typename Fn>
void for_each_piece(const Ranges &ranges, size_t from, size_t len, Fn &&fn) {
    size_t stream = 0;  // stream offset of the current range
    for (const ByteRange &r : ranges) {
        const size_t lo = std::max(stream, from), hi = std::min(stream + r.len, from + len);
        if (lo < hi) fn(r.at + (lo - stream), lo - from, hi - lo);
        stream += r.len;
        if (stream >= from + len) break;
    }
}

// comm.validate(), and one part per member; else HVD_ERR_INVALID_ARG (logged, naming
// `algorithm`).
inline hvd_status_t check_parts(const Comm &comm, const std::vector<Ranges> &parts,
                                const char *algorithm) {
    hvd_status_t st = comm.validate(algorithm);
    if (st != HVD_OK || parts.size() == comm.members.size()) return st;
    return comm.abort_with(HVD_ERR_INVALID_ARG, std::string(algorithm) + ": " +
                                                    std::to_string(parts.size()) + " parts for " +
                                                    std::to_string(comm.size()) + " members");
}

// Through the shared-memory group of comm (comm.shm set): members read each other's parts
// straight from their buffers (single copy) or through the slots. buf_bytes: the buffer's
// size, the same on every member; parts[m]: member m's ranges (the same on every member).
hvd_status_t allgather_ranges_shm(Comm &comm, char *buf, size_t buf_bytes,
                                  const std::vector<Ranges> &parts);

// Around the ring over the transport: at step k a member sends part (me - k) to its right and
// receives part (me - k - 1) from its left straight into its ranges, a message per range.
hvd_status_t allgather_ranges_ring(Comm &comm, char *buf, const std::vector<Ranges> &parts);

}  // namespace hvd::collectives
