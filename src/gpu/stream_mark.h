// SPDX-License-Identifier: Apache-2.0
// The point an op was enqueued at on the caller's CUDA stream: for an op given a stream but
// no ready event, an event is recorded on that stream by the enqueue (on the caller's
// thread), and the library's stream waits on it before it reads the inputs. The op thus
// reads what the caller queued on the stream before enqueueing it, as an NCCL call on that
// stream would. Events come from a process-wide pool per device and go back to it when the
// mark is released.
#pragma once

#include <cstdint>

namespace hvd::gpu {

class StreamMark {
  public:
    StreamMark() = default;
    StreamMark(const StreamMark &) = delete;
    StreamMark &operator=(const StreamMark &) = delete;
    ~StreamMark() { release(); }

    // Records a pooled event of `device` on `stream` (a cudaStream_t; null: CUDA's default
    // stream), releasing any event held before. The GPU module must be loaded (a CUDA tensor
    // passed the enqueue checks). Throws hvd::Error(HVD_ERR_DEVICE) with CUDA's message.
    // Thread-safe across marks.
    void record(int32_t device, void *stream);
    // The recorded event (null: none), an event of device().
    void *event() const { return event_; }
    int32_t device() const { return device_; }
    // Gives the event back to the pool. A wait already queued on it is unaffected (CUDA takes
    // the event's state when the wait is queued). Never throws.
    void release() noexcept;

  private:
    int32_t device_ = 0;
    void *event_ = nullptr;
};

}  // namespace hvd::gpu
