// SPDX-License-Identifier: Apache-2.0
// One enqueued collective: its parameters (fixed at enqueue), and its completion state,
// shared by the caller's handle and the engine.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "gpu/device_buffer.h"
#include "gpu/stream_mark.h"
#include "hvd/hvd.h"
#include "negotiation/op_meta.h"

namespace hvd::engine {

// The engine works in the negotiation layer's vocabulary: OpMeta, Response, OpType, ...
using namespace negotiation;

// A tensor as the engine sees it: the caller's memory plus a copied shape.
struct TensorRef {
    void *data = nullptr;
    int32_t dtype = 0;
    Shape shape;
    int32_t device_type = HVD_DEVICE_CPU;
    int32_t device_id = 0;
    void *ready_event = nullptr;  // CUDA tensors: a cudaEvent_t to wait for, or null

    // Unchecked products: every TensorRef the engine runs has a shape checked at enqueue (or,
    // for a joined rank's stand-in, by the coordinator) to have no negative dimension and a
    // size in bytes that fits in int64 (util::checked_size).
    size_t elements() const;
    size_t bytes() const;
};

// Library-owned output memory. Not zero-filled: the collective writes every byte, and
// zero-filling a large output first would cost a whole extra pass over it (page faults and
// memset were a large share of a 64 MiB allgather's profile). Outputs of 1 MiB and more come from
// the buffer pool (buffer_pool.h): reused, on transparent huge pages, so they are neither
// faulted in nor zeroed by the kernel again on every op.
class OwnedBuffer {
  public:
    OwnedBuffer() = default;
    OwnedBuffer(const OwnedBuffer &) = delete;
    OwnedBuffer &operator=(const OwnedBuffer &) = delete;
    ~OwnedBuffer() { release(); }
    void resize(size_t n);
    void resize_zeroed(size_t n) {
        resize(n);
        if (n) std::memset(data_, 0, n);
    }
    char *data() { return data_; }
    const char *data() const { return data_; }
    size_t size() const { return size_; }

  private:
    void release();
    char *data_ = nullptr;
    size_t size_ = 0;
    size_t pooled_capacity_ = 0;  // > 0: the block came from the pool
};

struct InFlightEntry;
class Request;

// What one enqueued op is and what it produced: everything but its completion state.
struct RequestData {
    // Makes every field as a new RequestData has it, keeping only the storage of the name's
    // string and of emptied vectors (a reused request, make_request). A field added to this
    // struct must be reset by it too (request.cc checks the struct's size on x86-64).
    void reset();

    OpMeta meta;  // what the coordinator compares across ranks
    TensorRef input;
    TensorRef output;   // caller-owned output (allreduce/broadcast); unused for allgather
    Deadline deadline;  // op timeout
    // CUDA tensors: the caller's cudaStream_t (HVD_OP_FIELD_STREAM; null is CUDA's default
    // stream), used where has_stream.
    void *stream = nullptr;
    // Where the enqueue came on that stream, for ops given a stream and no ready event: the
    // library's stream waits on it before reading the inputs (then it is released).
    gpu::StreamMark stream_mark;
    bool has_stream = false;
    bool traced = false;  // its NEGOTIATE span is open on the timeline (engine thread only)
    // Its name's entry among the names in flight (engine/in_flight_names.h), from enqueue to
    // finish; null for a request the engine made itself. Set by the enqueue under the
    // engine's queue mutex, before the engine sees the request; cleared by the engine thread
    // (also under it), which may read it without.
    InFlightEntry *in_flight = nullptr;
    // Its place among the engine's pending requests (pending_ops.h). Engine thread only.
    static constexpr size_t kNotPending = SIZE_MAX;
    size_t pending_slot = kNotPending;

    // Library-owned output, filled by the engine before complete(HVD_OK).
    OwnedBuffer owned_data;
    // Library-owned output of an op on CUDA tensors: device memory (owned_data then only
    // stages it on the host path).
    gpu::DeviceBuffer device_output;
    Shape owned_shape;
    std::vector<int32_t> received_splits;  // alltoall: rows from each member
    // Grouped ops: the parent completes when all of its members have; a member tells its
    // parent through member_done().
    std::vector<std::shared_ptr<Request>> members;
    std::weak_ptr<Request> parent;
    int64_t value = 0;  // process set create: the new set's id
};

class Request : public RequestData {
  public:
    // Completion. Thread-safe; complete() wins once, later calls are ignored. It is settle()
    // then notify(): the engine settles a whole fused run before it wakes anyone, so a woken
    // caller finds the run's later requests complete instead of sleeping again on each.
    void complete(hvd_status_t status, const std::string &message) {
        if (settle(status, message)) notify();
    }
    // Records the final status (false if there was one already); wakes nobody. Without a
    // message it takes no lock.
    bool settle(hvd_status_t status, const std::string &message);
    // Wakes the threads asleep in wait(); takes no lock when there are none.
    void notify();
    hvd_status_t status() const;
    // Waits until complete or the deadline; returns status() (HVD_INPROGRESS on expiry).
    hvd_status_t wait(const Deadline &until);
    // The latest a caller needs to wait: the engine completes every request by its op
    // deadline, and this adds the time the engine may take to notice it. Never for a
    // request without an op deadline.
    Deadline completion_bound() const;
    std::string message() const;

    void member_done(hvd_status_t status, const std::string &message);

    // Makes a request nobody refers to any more as good as new, for reuse: its data reset
    // (outputs and members released) and a fresh completion state. Not thread-safe: the
    // caller holds the only reference.
    void reset_for_reuse();

  private:
    mutable std::mutex mu_;
    std::condition_variable cv_;
    // Set once (compare-and-swap; with a message, under mu_ and before message_ is written);
    // read without a lock, so that a finished request is tested and waited on without one.
    std::atomic<hvd_status_t> status_{HVD_INPROGRESS};
    std::atomic<int> sleepers_{0};  // threads in wait() past their first test
    std::string message_;
    size_t members_done_ = 0;
    hvd_status_t first_member_error_ = HVD_OK;
    std::string first_member_message_;
};

using RequestPtr = std::shared_ptr<Request>;

// A new request: a released one, reset, when the calling thread or the process has one
// (request_pool.cc); a training step makes and releases hundreds. Thread-safe; throws
// std::bad_alloc.
RequestPtr make_request();

}  // namespace hvd::engine
