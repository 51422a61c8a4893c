// SPDX-License-Identifier: Apache-2.0
// CPU collective algorithms over a Comm. Each is blocking (it drives the transport until done,
// the deadline passes or the context aborts) and returns a status; on failure the contents
// of the output buffers are unspecified, the transport's operations have all ended (no
// buffer stays referenced) and the transport is aborted. All members must call the same
// collective with the same Comm::seq and compatible arguments (the engine's negotiation
// guarantees it). Called by one thread at a time per Comm (the transport's and the scratch
// buffer's). Algorithms live one per file, in a folder per back-end (p2p/, shm/); the
// dispatching entry points run the first algorithm of the collective's table (algorithms.h)
// that supports the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/comm.h"
#include "hvd/hvd.h"

namespace hvd::collectives {

// ---- Dispatch (what the engine calls). A call no algorithm supports (device memory without
// a GPU back-end) fails with HVD_ERR_UNSUPPORTED.

// In place: buf holds this rank's count elements of dtype and receives the reduction
// (op: HVD_OP_SUM, MIN, MAX or PRODUCT; scaling is the caller's job). One host: shared
// memory; a job spanning hosts, hierarchically (allreduce_hierarchical); else up to
// recursive_doubling_max_bytes() recursive doubling (latency-optimal,
// any group size), above it a pipelined ring (reduce-scatter then
// allgather). Every rank ends with bitwise identical results.
// Errors: HVD_ERR_UNSUPPORTED (dtype or op), HVD_ERR_INVALID_ARG (null buf with count > 0,
// malformed Comm), and the transport's failures (HVD_ERR_TIMED_OUT, HVD_ERR_PEER_FAILED,
// the abort status, ...).
hvd_status_t allreduce(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op);

// Ragged allgather of bytes: member r contributes bytes[r] bytes (any may be 0); out (sum of
// bytes) receives them concatenated in member order. in may alias out + offset of this
// member's block exactly (then no copy is made); otherwise in and out must not overlap.
// One host: shared memory; a job spanning hosts, hierarchically (allgatherv_hierarchical,
// from the hierarchy's size); else the ring: every member must receive every other block
// anyway, and the ring does that with each byte crossing each link once.
hvd_status_t allgatherv(Comm &comm, const void *in, void *out, const std::vector<size_t> &bytes);

// buf (bytes long on every member) is replaced on every member by root_index's contents.
// One host: shared memory; a job spanning hosts, hierarchically (broadcast_hierarchical,
// from the hierarchy's size); else up to broadcast_tree_max_bytes() a binomial tree (log2 n
// latency), above it a pipelined chain (each byte crosses each link once).
hvd_status_t broadcast(Comm &comm, void *buf, size_t bytes, int32_t root_index);

// ---- The algorithms themselves, exposed for tests and benchmarks.

// Full-size exchanges with partners at distance 1, 2, 4, ...; a group that is not a power of
// two first folds its extra members into partners. Scratch: count elements.
hvd_status_t allreduce_recursive_doubling(Comm &comm, void *buf, size_t count, int32_t dtype,
                                          int32_t op);

// Reduce-scatter then allgather around the ring, in chunks of chunk_bytes (rounded to whole
// elements) so a chunk's transfer overlaps the previous chunk's reduction. The first form
// uses ring_chunk_bytes(). Scratch: a few chunks.
hvd_status_t allreduce_ring(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op);
hvd_status_t allreduce_ring(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op,
                            size_t chunk_bytes);

// A job spanning hosts (comm.hierarchy set, collectives/hierarchy.h): the host's ranks
// reduce-scatter the buffer's L shares through shared memory, local rank i allreduces share i
// (1/L of the buffer) across hosts with the ranks of local rank i, the host's ranks gather the
// shares through shared memory. HVD_ERR_INVALID_ARG without a hierarchy.
hvd_status_t allreduce_hierarchical(Comm &comm, void *buf, size_t count, int32_t dtype, int32_t op);

// A job spanning hosts (comm.hierarchy set): the host's ranks gather the host's block through
// shared memory, local rank i gathers share i of every host's block across hosts with the
// ranks of local rank i (i below the fewest ranks any host runs), the host's ranks gather the
// shares through shared memory. Same contract as allgatherv (in may alias its place in out);
// any ranks per host. HVD_ERR_INVALID_ARG without a hierarchy.
hvd_status_t allgatherv_hierarchical(Comm &comm, const void *in, void *out,
                                     const std::vector<size_t> &bytes);

// A job spanning hosts (comm.hierarchy set): across hosts from the root to one rank per host
// (or, above broadcast_tree_max_bytes() where every host runs two ranks or more, in shares
// from the root's host's ranks to the same local ranks elsewhere), then within each host
// through shared memory. HVD_ERR_INVALID_ARG without a hierarchy.
hvd_status_t broadcast_hierarchical(Comm &comm, void *buf, size_t bytes, int32_t root_index);

// Root sends to the heads of log2 n subtrees, each forwards the same way.
hvd_status_t broadcast_binomial_tree(Comm &comm, void *buf, size_t bytes, int32_t root_index);

// Root -> root+1 -> ... -> root-1, in chunks of chunk_bytes that each member forwards as soon
// as it has them. The first form uses broadcast_chunk_bytes().
hvd_status_t broadcast_chain(Comm &comm, void *buf, size_t bytes, int32_t root_index);
hvd_status_t broadcast_chain(Comm &comm, void *buf, size_t bytes, int32_t root_index,
                             size_t chunk_bytes);

// Around the ring: at step k a member sends block (me - k) to its right and receives block
// (me - k - 1) from its left, straight into its place in out. Same contract as allgatherv.
hvd_status_t allgatherv_ring(Comm &comm, const void *in, void *out,
                             const std::vector<size_t> &bytes);

// ---- Tunables (bytes): their values in effect, read once from the settings table
// (config/settings.h, which holds the defaults; a value <= 0 or malformed keeps the default).
// Recursive doubling sends log2(n) times the buffer in log2(n) rounds, the ring 2(n-1)/n of
// it in 2(n-1) rounds: for the group sizes of one or a few hosts the rounds dominate well past
// 64 KiB (on a 2-core VM over UCX loopback, doubling still won at 1 MiB with 3-4 ranks).
size_t recursive_doubling_max_bytes();  // HVD_ALLREDUCE_RD_MAX_BYTES
size_t ring_chunk_bytes();              // HVD_ALLREDUCE_RING_CHUNK_BYTES
size_t broadcast_tree_max_bytes();      // HVD_BROADCAST_TREE_MAX_BYTES
size_t broadcast_chunk_bytes();         // HVD_BROADCAST_CHUNK_BYTES

// ---- Argument checks shared by the algorithms' entry points: HVD_OK or the (logged) error.
hvd_status_t check_allreduce_args(const Comm &comm, const void *buf, size_t count, int32_t dtype,
                                  int32_t op, const char *algorithm);
hvd_status_t check_broadcast_args(const Comm &comm, const void *buf, size_t bytes,
                                  int32_t root_index, const char *algorithm);
hvd_status_t check_allgatherv_args(const Comm &comm, const void *in, const void *out,
                                   const std::vector<size_t> &bytes, const char *algorithm);
// reducescatter's: the allreduce's checks over the sum of counts, one count per member, an
// output unless this member's block is empty.
hvd_status_t check_reducescatter_args(const Comm &comm, const void *in, const void *out,
                                      const std::vector<size_t> &counts, int32_t dtype, int32_t op,
                                      const char *algorithm);

}  // namespace hvd::collectives

// ---- alltoallv, reduce-scatter and Adasum (what issue 3's collectives call). Same contract
// as above: blocking, one thread per Comm, every member calls with the same seq and
// compatible arguments, and on failure the outputs are unspecified and the transport aborted.
namespace hvd::collectives {

// Each member sends send_bytes[j] bytes (consecutive blocks of `in`, in member order) to
// member j and receives recv_bytes[j] bytes from member j into consecutive blocks of `out`.
// send_bytes[j] on member i must equal recv_bytes[i] on member j (a receive of another size
// fails with HVD_ERR_INTERNAL); zero-byte blocks cost no message. in and out must not
// overlap. Pairwise exchange (at step k send to me+k, receive from me-k), at most 16 steps in
// flight; the own block is copied. Errors: HVD_ERR_INVALID_ARG (sizes not one per member,
// own send and receive sizes differ, null buffer with bytes to move, malformed Comm), and the
// transport's failures.
hvd_status_t alltoallv(Comm &comm, const void *in, const std::vector<size_t> &send_bytes, void *out,
                       const std::vector<size_t> &recv_bytes);
// The pairwise exchange itself (alltoallv's one algorithm).
hvd_status_t alltoallv_pairwise(Comm &comm, const void *in, const std::vector<size_t> &send_bytes,
                                void *out, const std::vector<size_t> &recv_bytes);

// Reduce-scatter: `in` holds count elements on every member; member r receives into `out`
// the reduction (op: SUM, MIN, MAX, PRODUCT) of elements [offset_r, offset_r + counts[r]),
// where offset_r = sum of counts before r. counts has one entry per member (any may be 0);
// their sum is count. out may be exactly in + offset_r elements (then the own block is
// reduced in place); otherwise in and out must not overlap. One host with three members or
// more: shared memory (reducescatter_shm, shm/shm_sync.h); else a ring over the uneven
// blocks, pipelined in chunks of ring_chunk_bytes() (HVD_ALLREDUCE_RING_CHUNK_BYTES). Each
// block is reduced in one fixed order of members, so the result does not depend on timing.
// The ring's scratch: a few chunks plus the elements of the blocks this member forwards
// (count minus its own and its left neighbour's block). Errors: HVD_ERR_UNSUPPORTED (dtype or
// op), HVD_ERR_INVALID_ARG (counts not one per member, null buffer, malformed Comm), and the
// transport's failures.
hvd_status_t reducescatter(Comm &comm, const void *in, void *out, const std::vector<size_t> &counts,
                           int32_t dtype, int32_t op);
// The ring, with ring_chunk_bytes() or an explicit chunk size (bytes, rounded down to whole
// elements, at least one).
hvd_status_t reducescatter_ring(Comm &comm, const void *in, void *out,
                                const std::vector<size_t> &counts, int32_t dtype, int32_t op);
hvd_status_t reducescatter_ring(Comm &comm, const void *in, void *out,
                                const std::vector<size_t> &counts, int32_t dtype, int32_t op,
                                size_t chunk_bytes);

// Adasum (Maleki et al., "Scaling Distributed Training with Adaptive Summation"), in place
// on buf (count elements of float16, bfloat16, float32 or float64). Members are combined
// recursively in pairs, lower indices on the left: a and b become
// (1 - dot(a,b)/(2|a|^2)) a + (1 - dot(a,b)/(2|b|^2)) b, where a squared norm below 1e-8
// (Horovod's threshold) gives its vector the coefficient 1. Dot products and norms are
// accumulated in float64; the combination is computed in float64 and rounded to the dtype at
// every level. Horovod's structure: vector halving with distance doubling, the partial
// dot/norm sums allreduced within each subgroup, then the halves gathered back. Every member
// ends bitwise identical. Scratch: (count + 1) / 2 elements.
// Errors: HVD_ERR_UNSUPPORTED (another dtype, or a group size that is not a power of two),
// HVD_ERR_INVALID_ARG (null buf with count > 0, malformed Comm), and the transport's failures.
hvd_status_t adasum(Comm &comm, void *buf, size_t count, int32_t dtype);

}  // namespace hvd::collectives
