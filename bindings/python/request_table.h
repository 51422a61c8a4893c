// SPDX-License-Identifier: Apache-2.0
// The table of outstanding requests behind hvd's integer handles, for the pybind11 backend
// (hvd/_requests.py is the same table in Python, for the ctypes backend).
//
// hvd._hvd_pybind.requests: add(req, keep, finish) -> handle, poll(handle),
// synchronize(handle[, missing_ok]), synchronize_or_none(handle), detach_all(),
// release_detached(), set_session(ctx, generation). The table is guarded by the GIL: every
// function holds it, except synchronize while it waits, and a handle stays valid for every
// thread waiting on it.
#pragma once

#include "py_convert.h"

#include <memory>

namespace hvd_py {

// An outstanding request and the Python objects it needs. The request is released, then the
// objects dropped, when the last holder (the table, or a thread still waiting) lets go; that
// happens with the GIL held.
class Pending {
  public:
    Pending(hvd_request_h req, py::object keep, py::object finish, py::object result)
        : req_(req),
          keep_(std::move(keep)),
          finish_(std::move(finish)),
          result_(std::move(result)) {}
    ~Pending() { hvd_request_release(req_); }
    Pending(const Pending &) = delete;
    Pending &operator=(const Pending &) = delete;

    hvd_request_h req() const { return req_; }
    // The op's result once it succeeded: finish(req), or the given result without finish.
    py::object result() const;

  private:
    hvd_request_h req_;
    py::object keep_;    // objects whose memory the op reads or writes
    py::object finish_;  // req -> result, or None
    py::object result_;  // the result when finish_ is None
};

// The context that fast paths enqueue on: NULL while hvd is not initialised. generation is
// hvd._runtime's count of shutdowns, by which process sets of an earlier context are told
// apart.
struct Session {
    hvd_context_h ctx = nullptr;
    int64_t generation = -1;
};

const Session &current_session();

// Waits (GIL released, in slices) for req's final status; -1 with a Python error when a
// signal handler raised.
int wait_final(hvd_request_h req, hvd_status_t *status);

// Takes ownership of a started request; returns its handle (a new Python int).
py::object add_pending(hvd_request_h req, py::object keep, py::object finish, py::object result);

// Adds the submodule `requests` to m.
void add_request_table(py::module_ &m);

}  // namespace hvd_py
