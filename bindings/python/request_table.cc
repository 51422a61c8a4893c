// SPDX-License-Identifier: Apache-2.0
// The table of outstanding requests behind hvd's integer handles (see request_table.h).

#include "request_table.h"

#include "handle_map.h"

#include <utility>
#include <vector>

namespace hvd_py {

namespace {

// A wait slice: synchronize returns to the interpreter this often so that Ctrl-C is seen.
constexpr int64_t kWaitSliceMs = 500;

struct Table {
    HandleMap<Pending> live;
    std::vector<std::shared_ptr<Pending>> detached;  // by detach_all, until release_detached
    Session session;
};

// Never destroyed: its entries hold Python objects, which must not be dropped after the
// interpreter is gone.
Table &table() {
    static Table *t = new Table();
    return *t;
}

// The key of a handle; false for an object no handle can be.
bool handle_key(PyObject *handle, int64_t *key) {
    if (!PyLong_Check(handle)) return false;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(handle, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    *key = static_cast<int64_t>(v);
    return overflow == 0;
}

// The live entry of a handle, or nullptr.
std::shared_ptr<Pending> find(PyObject *handle, int64_t *key) {
    if (!handle_key(handle, key)) return nullptr;
    return table().live.find(*key);
}

PyObject *unknown_handle(PyObject *handle) {
    PyErr_Format(PyExc_ValueError, "unknown or already synchronized handle %R", handle);
    return nullptr;
}

bool check_nargs(const char *fn, Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi) {
    if (nargs >= lo && nargs <= hi) return true;
    PyErr_Format(PyExc_TypeError, "%s takes %zd to %zd arguments (%zd given)", fn, lo, hi, nargs);
    return false;
}

// add(req, keep, finish): takes ownership of a started request; returns its handle.
PyObject *add(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (!check_nargs("add", nargs, 3, 3)) return nullptr;
    return guarded([&]() -> PyObject * {
        hvd_request_h req = to_handle<hvd_request>(args[0], "req");
        return add_pending(req, py::reinterpret_borrow<py::object>(args[1]),
                           py::reinterpret_borrow<py::object>(args[2]), py::none())
            .release()
            .ptr();
    });
}

// poll(handle): True once the op finished (successfully or not). Never blocks.
PyObject *poll(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (!check_nargs("poll", nargs, 1, 1)) return nullptr;
    int64_t key = 0;
    std::shared_ptr<Pending> p = find(args[0], &key);
    if (p == nullptr) return unknown_handle(args[0]);
    return PyBool_FromLong(hvd_request_test(p->req()) != HVD_INPROGRESS);
}

// Waits for handle's op and returns its result, or raises HorovodInternalError when it
// failed; the handle is consumed either way. An unknown handle is a ValueError, or None with
// missing_ok.
PyObject *synchronize_handle(PyObject *handle, bool missing_ok) {
    int64_t key = 0;
    std::shared_ptr<Pending> p = find(handle, &key);
    if (p == nullptr) {
        if (missing_ok) Py_RETURN_NONE;
        return unknown_handle(handle);
    }
    hvd_status_t status = HVD_OK;
    if (wait_final(p->req(), &status) != 0) return nullptr;
    if (!table().live.erase(key)) {
        PyErr_Format(PyExc_ValueError, "handle %R was synchronized by another thread", handle);
        return nullptr;
    }
    return guarded([&]() -> PyObject * {
        if (status != HVD_OK) raise_status(status, request_message_text(p->req()), true);
        return p->result().release().ptr();
    });
}

// synchronize(handle[, missing_ok]): synchronize_handle.
PyObject *synchronize(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (!check_nargs("synchronize", nargs, 1, 2)) return nullptr;
    int missing_ok = nargs > 1 ? PyObject_IsTrue(args[1]) : 0;
    if (missing_ok < 0) return nullptr;
    return synchronize_handle(args[0], missing_ok != 0);
}

// synchronize_or_none(handle): Horovod's synchronize, as hvd.torch exports it (an unknown
// handle gives None), in one call.
PyObject *synchronize_or_none(PyObject *, PyObject *handle) {
    return synchronize_handle(handle, true);
}

// detach_all(): empties the table; its requests are released by release_detached().
PyObject *detach_all(PyObject *, PyObject *const *, Py_ssize_t nargs) {
    if (!check_nargs("detach_all", nargs, 0, 0)) return nullptr;
    return guarded([&]() -> PyObject * {
        Table &t = table();
        t.live.take_all(&t.detached);
        Py_RETURN_NONE;
    });
}

PyObject *release_detached(PyObject *, PyObject *const *, Py_ssize_t nargs) {
    if (!check_nargs("release_detached", nargs, 0, 0)) return nullptr;
    // Moved out first: dropping the objects may run Python code that uses the table.
    std::vector<std::shared_ptr<Pending>> gone;
    gone.swap(table().detached);
    gone.clear();
    Py_RETURN_NONE;
}

// set_session(ctx, generation): the context fast paths enqueue on (0 or None: none).
PyObject *set_session(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (!check_nargs("set_session", nargs, 2, 2)) return nullptr;
    return guarded([&]() -> PyObject * {
        Session s;
        s.ctx = to_handle<hvd_context>(args[0], "ctx");
        s.generation = to_i64(args[1], "generation");
        table().session = s;
        Py_RETURN_NONE;
    });
}

PyMethodDef methods[] = {
    {"add", fastcall(add), METH_FASTCALL,
     "add(req, keep, finish) -> handle: takes ownership of a started request; keep: objects "
     "whose memory it uses; finish(req) builds the result (None: the result is None)."},
    {"poll", fastcall(poll), METH_FASTCALL,
     "poll(handle) -> bool: whether the op finished. Never blocks."},
    {"synchronize", fastcall(synchronize), METH_FASTCALL,
     "synchronize(handle[, missing_ok]) -> result: waits (GIL released) and consumes the "
     "handle; HorovodInternalError if the op failed."},
    {"synchronize_or_none", synchronize_or_none, METH_O,
     "synchronize_or_none(handle)\n--\n\nWaits for an async op and returns its result (None "
     "for an unknown handle, as Horovod does). Raises HorovodInternalError if the op failed."},
    {"detach_all", fastcall(detach_all), METH_FASTCALL,
     "Empties the table (at shutdown, before the context is finalised)."},
    {"release_detached", fastcall(release_detached), METH_FASTCALL,
     "Releases the requests detach_all() took out of the table."},
    {"set_session", fastcall(set_session), METH_FASTCALL,
     "set_session(ctx, generation): the context fast paths enqueue on."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

py::object Pending::result() const {
    if (finish_.is_none()) return result_;
    return finish_(from_pointer(req_));
}

int wait_final(hvd_request_h req, hvd_status_t *status) {
    *status = hvd_request_test(req);
    while (*status == HVD_INPROGRESS) {
        Py_BEGIN_ALLOW_THREADS;
        *status = hvd_request_wait(req, kWaitSliceMs);
        Py_END_ALLOW_THREADS;
        if (*status == HVD_INPROGRESS && PyErr_CheckSignals() != 0) return -1;
    }
    return 0;
}

const Session &current_session() {
    return table().session;
}

py::object add_pending(hvd_request_h req, py::object keep, py::object finish, py::object result) {
    auto p = std::make_shared<Pending>(req, std::move(keep), std::move(finish), std::move(result));
    Table &t = table();
    py::object handle = py::reinterpret_steal<py::object>(PyLong_FromLongLong(t.live.next()));
    if (!handle) throw py::error_already_set();
    t.live.add(std::move(p));
    return handle;
}

void add_request_table(py::module_ &m) {
    add_submodule(m, "requests", "The table of outstanding requests behind hvd's integer handles.",
                  methods);
}

}  // namespace hvd_py
