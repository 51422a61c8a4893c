// SPDX-License-Identifier: Apache-2.0
// Errors and argument conversion shared by the functions of hvd._hvd_pybind.

#include "py_convert.h"

#include <cstring>

namespace hvd_py {

// ------------------------------------------------------------------ errors

std::string last_error_text() {
    size_t n = hvd_last_error(nullptr, 0);
    std::string buf(n + 1, '\0');
    hvd_last_error(&buf[0], buf.size());
    buf.resize(std::strlen(buf.c_str()));
    return buf;
}

std::string request_message_text(hvd_request_h req) {
    size_t n = hvd_request_message(req, nullptr, 0);
    std::string buf(n + 1, '\0');
    hvd_request_message(req, &buf[0], buf.size());
    buf.resize(std::strlen(buf.c_str()));
    return buf;
}

// libhvd's messages are UTF-8; undecodable bytes become U+FFFD as in the ctypes backend.
py::str decode(const std::string &text) {
    PyObject *s =
        PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
    if (s == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(s);
}

// Raises hvd._errors.error_for(status, detail, during_wait=during_wait).
[[noreturn]] void raise_status(int status, const std::string &detail, bool during_wait) {
    py::object error_for = py::module_::import("hvd._errors").attr("error_for");
    py::object exc = error_for(status, decode(detail), py::arg("during_wait") = during_wait);
    PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
    throw py::error_already_set();
}

[[noreturn]] void raise_invalid(const std::string &detail) {
    raise_status(HVD_ERR_INVALID_ARG, detail);
}

// The ctypes backend's _check: negative statuses raise with this thread's last error.
int check(hvd_status_t status) {
    if (status < 0) raise_status(status, last_error_text());
    return status;
}

// ------------------------------------------------------------------ argument conversion

std::string type_name(py::handle obj) {
    return Py_TYPE(obj.ptr())->tp_name;
}

// An int (or anything with __index__) as a 64-bit signed integer.
int64_t to_i64(py::handle obj, const char *what) {
    PyObject *index = PyNumber_Index(obj.ptr());
    if (index == nullptr) {
        PyErr_Clear();
        raise_invalid(std::string(what) + " must be an int, got " + type_name(obj));
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (overflow != 0) raise_invalid(std::string(what) + " is out of range of a 64-bit integer");
    return static_cast<int64_t>(v);
}

int32_t to_i32(py::handle obj, const char *what) {
    int64_t v = to_i64(obj, what);
    if (v < INT32_MIN || v > INT32_MAX) {
        raise_invalid(std::string(what) +
                      " is out of range of a 32-bit integer: " + std::to_string(v));
    }
    return static_cast<int32_t>(v);
}

// A handle or data pointer: an int (0 is NULL) or None, as ctypes' c_void_p takes it.
void *to_pointer(py::handle obj, const char *what) {
    if (obj.is_none()) return nullptr;
    PyObject *index = PyNumber_Index(obj.ptr());
    if (index == nullptr) {
        PyErr_Clear();
        raise_invalid(std::string(what) + " must be an int address, got " + type_name(obj));
    }
    void *p = PyLong_AsVoidPtr(index);
    Py_DECREF(index);
    if (p == nullptr && PyErr_Occurred()) {
        PyErr_Clear();
        raise_invalid(std::string(what) + " is not a valid address");
    }
    return p;
}

py::int_ from_pointer(const void *p) {
    PyObject *v = PyLong_FromVoidPtr(const_cast<void *>(p));
    if (v == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::int_>(v);
}

// A list or tuple (or any iterable) as a fast sequence; owns a reference.
py::object to_sequence(py::handle obj, const char *what) {
    PyObject *seq = PySequence_Fast(obj.ptr(), "");
    if (seq == nullptr) {
        PyErr_Clear();
        raise_invalid(std::string(what) + " must be a sequence, got " + type_name(obj));
    }
    return py::reinterpret_steal<py::object>(seq);
}

// The UTF-8 bytes of a str; they live as long as the str object does.
const char *to_utf8(py::handle obj, const char *what) {
    if (!PyUnicode_Check(obj.ptr())) {
        raise_invalid(std::string(what) + " must be a str, got " + type_name(obj));
    }
    Py_ssize_t len = 0;
    const char *s = PyUnicode_AsUTF8AndSize(obj.ptr(), &len);
    if (s == nullptr) throw py::error_already_set();
    if (std::strlen(s) != static_cast<size_t>(len)) {
        raise_invalid(std::string(what) + " must not contain a NUL character");
    }
    return s;
}

void add_submodule(py::module_ &m, const char *name, const char *doc, PyMethodDef *methods) {
    py::module_ sub = m.def_submodule(name, doc);
    if (PyModule_AddFunctions(sub.ptr(), methods) != 0) throw py::error_already_set();
}

}  // namespace hvd_py
