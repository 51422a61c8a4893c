// SPDX-License-Identifier: Apache-2.0
// Errors and argument conversion shared by the functions of hvd._hvd_pybind: libhvd's error
// details as Python exceptions (what hvd._errors.error_for returns), Python objects as the C
// ABI's integers, handles and strings. Every function needs the GIL.
#pragma once

#include <hvd/hvd.h>

// pybind11's headers shadow members in constructors; the warning is theirs, not ours (they
// are system headers when CMake adds them; the pragma covers builds that pass them with -I).
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#include <pybind11/pybind11.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

namespace hvd_py {

namespace py = pybind11;

// ------------------------------------------------------------------ errors

// This thread's detail of the last failed libhvd call.
std::string last_error_text();

// The error detail of a request (empty when it succeeded).
std::string request_message_text(hvd_request_h req);

// libhvd's messages are UTF-8; undecodable bytes become U+FFFD as in the ctypes backend.
py::str decode(const std::string &text);

// Raises hvd._errors.error_for(status, detail, during_wait=during_wait).
[[noreturn]] void raise_status(int status, const std::string &detail, bool during_wait = false);

// Raises the ValueError of HVD_ERR_INVALID_ARG with detail.
[[noreturn]] void raise_invalid(const std::string &detail);

// The ctypes backend's _check: negative statuses raise with this thread's last error.
int check(hvd_status_t status);

// ------------------------------------------------------------------ argument conversion

std::string type_name(py::handle obj);

// An int (or anything with __index__) as a 64-bit signed integer; what names it in errors.
int64_t to_i64(py::handle obj, const char *what);
int32_t to_i32(py::handle obj, const char *what);

// A handle or data pointer: an int (0 is NULL) or None, as ctypes' c_void_p takes it.
void *to_pointer(py::handle obj, const char *what);

template <typename T>
T *to_handle(py::handle obj, const char *what) {
    return static_cast<T *>(to_pointer(obj, what));
}

py::int_ from_pointer(const void *p);

// A list or tuple (or any iterable) as a fast sequence; owns a reference.
py::object to_sequence(py::handle obj, const char *what);

inline Py_ssize_t seq_size(const py::object &seq) {
    return PySequence_Fast_GET_SIZE(seq.ptr());
}

inline py::handle seq_item(const py::object &seq, Py_ssize_t i) {
    return PySequence_Fast_GET_ITEM(seq.ptr(), i);
}

// The UTF-8 bytes of a str; they live as long as the str object does.
const char *to_utf8(py::handle obj, const char *what);

// The body of a function called straight from Python (a PyMethodDef): fn's result, or NULL
// with the Python error set when it threw.
template <typename Fn>
PyObject *guarded(Fn &&fn) noexcept {
    try {
        return fn();
    } catch (py::error_already_set &e) {
        e.restore();
    } catch (const py::builtin_exception &e) {
        e.set_error();
    } catch (const std::bad_alloc &) {
        PyErr_NoMemory();
    } catch (const std::exception &e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
}

// A METH_FASTCALL function as the PyCFunction a PyMethodDef holds.
using FastCallFn = PyObject *(*)(PyObject *, PyObject *const *, Py_ssize_t);
inline PyCFunction fastcall(FastCallFn fn) {
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn));
}

// Adds the submodule name of m, with the functions of methods (ended by a zeroed entry).
void add_submodule(py::module_ &m, const char *name, const char *doc, PyMethodDef *methods);

// ------------------------------------------------------------------ tensors and parameters

// An hvd_tensor_t and the storage of its shape.
struct Tensor {
    hvd_tensor_t t;
    int64_t dims[HVD_MAX_NDIM];
};

}  // namespace hvd_py
