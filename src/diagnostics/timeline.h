// SPDX-License-Identifier: Apache-2.0
// Horovod's timeline: a Chrome trace (JSON array of events, readable by chrome://tracing and
// Perfetto) with one row per tensor name. Each op shows a NEGOTIATE_<OP> span (enqueue until
// every rank was ready) and an <OP> span (the collective), with activity sub-spans inside
// (QUEUE, MEMCPY_IN_FUSION_BUFFER, the transport op, MEMCPY_OUT_FUSION_BUFFER). As in
// Horovod's, the process's metadata carries start_time_since_epoch_in_micros (the wall-clock
// time of ts 0) and cycles are CYCLE_START markers; unlike Horovod's (a trace process per
// tensor), a trace process is a rank and each tensor a row (thread) in it. Started by
// HVD_TIMELINE=file at init or hvd_timeline_start at run time; the file is valid JSON after
// stop (and after finalize). Thread-safe; when not started every call is a cheap no-op.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace hvd::diagnostics {

class Timeline {
  public:
    Timeline();
    ~Timeline();  // stops if started
    Timeline(const Timeline &) = delete;
    Timeline &operator=(const Timeline &) = delete;

    // Opens path (truncating it) and starts recording, as process `rank` in the trace.
    // mark_cycles: also record an instant event per engine cycle. Throws
    // hvd::Error(HVD_ERR_INVALID_ARG) naming the path if it cannot be opened, and
    // HVD_ERR_BUSY if already started.
    void start(const std::string &path, bool mark_cycles, int32_t rank);
    // Finishes the JSON array and closes the file. No-op when not started.
    void stop();
    bool active() const;

    // A span on the tensor's row: begin ... end, properly nested per tensor.
    void begin(const std::string &tensor, const std::string &activity);
    void end(const std::string &tensor);
    // Horovod's CYCLE_START marker (a global instant), only when mark_cycles was given.
    void mark_cycle();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::diagnostics
