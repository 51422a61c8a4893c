// CPU collective algorithms over a Comm. Each is blocking (it drives the transport until done,
// the deadline passes or the context aborts) and returns a status; on failure the contents
// of the output buffers are unspecified. All members must call the same collective with the
// same Comm::seq and compatible arguments (the engine's negotiation guarantees it).
// Algorithms live one per file; these entry points choose between them by size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/comm.h"
#include "hvd/hvd.h"

namespace hvd::collectives {

// In place: buf holds this rank's count elements of dtype and receives the reduction
// (op: HVD_OP_SUM, MIN, MAX or PRODUCT; scaling is the caller's job). Small messages use
// recursive doubling (latency-optimal, any group size), large ones a pipelined ring
// (reduce-scatter then allgather). Every rank ends with bitwise identical results.
hvd_status_t allreduce(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op);

// Exposed for tests and benchmarks; allreduce() picks one of these.
hvd_status_t allreduce_recursive_doubling(Comm &comm, void *buf, size_t count, int32_t dtype,
                                          int32_t op);
hvd_status_t allreduce_ring(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op);

// Ragged allgather of bytes: member r contributes bytes[r] bytes; out (sum of bytes) receives
// them concatenated in member order. in may alias out + offset of this member's block.
hvd_status_t allgatherv(Comm &comm, const void *in, void *out, const std::vector<size_t> &bytes);

// buf (bytes long on every member) is replaced on every member by root_index's contents.
hvd_status_t broadcast(Comm &comm, void *buf, size_t bytes, int32_t root_index);

}  // namespace hvd::collectives
