// SPDX-License-Identifier: Apache-2.0
// hvd._hvd_pybind.torch_fast: hvd.torch's allreduce of the common case in one call.
//
// allreduce(tensor, output, average, name, op, prescale, postscale, process_set) does what
// hvd.torch's allreduce_async(_) does through the generic path (argument checks, the tensor's
// description, the enqueue, the handle) for a dense, contiguous CPU tensor of a supported
// dtype, given valid arguments, on the global or a registered process set;
// grouped_allreduce(tensors, in_place, ...) does the same for grouped_allreduce_async(_) of a
// list or tuple of such tensors, in one grouped enqueue. Each returns the handle, or None for
// anything else, without side effects: the caller then takes the generic path, which raises
// the same errors as before. The tensor is read through the Python C API
// (torch is neither included nor linked); hvd.torch registers the torch objects it compares
// against once, with register().

#include "torch_fast_path.h"

#include "request_table.h"

#include <cstring>
#include <string>
#include <vector>

namespace hvd_py {

namespace {

// What register() was given, and the attribute names the fast path reads.
struct Torch {
    PyObject *tensor_type = nullptr;  // torch.Tensor
    PyObject *strided = nullptr;      // torch.strided
    PyObject *dtype_codes = nullptr;  // {torch.dtype: libhvd dtype code}
    PyObject *empty_like = nullptr;   // torch.empty_like
    PyObject *global_set = nullptr;   // hvd.process_sets.global_process_set
    PyObject *layout, *is_cpu, *is_contiguous, *data_ptr, *dtype, *shape;
    PyObject *c_handle, *generation;  // of a ProcessSet
};

// Never destroyed, as the objects it holds.
Torch *torch = nullptr;

// Reduction ops the fast path takes (Adasum needs checks of the set: the generic path).
bool fast_op(long op) {
    return op == HVD_OP_AVERAGE || op == HVD_OP_SUM || op == HVD_OP_MIN || op == HVD_OP_MAX ||
           op == HVD_OP_PRODUCT;
}

// A new reference to obj.name, or NULL with no error set.
PyObject *attr(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == nullptr) PyErr_Clear();
    return v;
}

bool attr_is(PyObject *obj, PyObject *name, PyObject *expected) {
    PyObject *v = attr(obj, name);
    Py_XDECREF(v);
    return v != nullptr && v == expected;
}

// A new reference to obj.name(), or NULL with no error set.
PyObject *call0(PyObject *obj, PyObject *name) {
    PyObject *args[] = {obj};
    PyObject *v =
        PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
    if (v == nullptr) PyErr_Clear();
    return v;
}

// An exact int's value; false (no error set) for anything else.
bool exact_i64(PyObject *obj, int64_t *out) {
    if (obj == nullptr || !PyLong_CheckExact(obj)) return false;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    *out = static_cast<int64_t>(v);
    return overflow == 0;
}

// A scale factor given as an exact float or int.
bool scale(PyObject *obj, double *out) {
    if (PyFloat_CheckExact(obj)) {
        *out = PyFloat_AS_DOUBLE(obj);
        return true;
    }
    if (!PyLong_CheckExact(obj)) return false;
    *out = PyLong_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
    }
    return true;
}

// Fills out for a dense, contiguous CPU tensor of a supported dtype; false for anything else.
bool describe(PyObject *t, Tensor *out) {
    if (!PyObject_TypeCheck(t, reinterpret_cast<PyTypeObject *>(torch->tensor_type)) ||
        !attr_is(t, torch->layout, torch->strided) || !attr_is(t, torch->is_cpu, Py_True)) {
        return false;
    }
    PyObject *contiguous = call0(t, torch->is_contiguous);
    Py_XDECREF(contiguous);
    if (contiguous != Py_True) return false;
    PyObject *dtype = attr(t, torch->dtype);
    if (dtype == nullptr) return false;
    int64_t code = 0;
    bool known = exact_i64(PyDict_GetItemWithError(torch->dtype_codes, dtype), &code);
    Py_DECREF(dtype);
    if (!known) {
        PyErr_Clear();
        return false;
    }
    PyObject *ptr = call0(t, torch->data_ptr);
    int64_t address = 0;
    bool addressed = exact_i64(ptr, &address);
    Py_XDECREF(ptr);
    PyObject *shape = attr(t, torch->shape);
    if (!addressed || shape == nullptr) {
        Py_XDECREF(shape);
        return false;
    }
    bool ok = PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) <= HVD_MAX_NDIM;
    Py_ssize_t ndim = ok ? PyTuple_GET_SIZE(shape) : 0;
    for (Py_ssize_t k = 0; ok && k < ndim; ++k)
        ok = exact_i64(PyTuple_GET_ITEM(shape, k), &out->dims[k]);
    Py_DECREF(shape);
    if (!ok) return false;
    std::memset(&out->t, 0, sizeof(out->t));
    out->t.data = reinterpret_cast<void *>(static_cast<intptr_t>(address));
    out->t.dtype = static_cast<int32_t>(code);
    out->t.ndim = static_cast<int32_t>(ndim);
    out->t.shape = out->dims;
    out->t.device_type = HVD_DEVICE_CPU;
    return true;
}

// The libhvd handle of process_set: NULL for the global set; false unless it is registered
// with the current context.
bool set_handle(PyObject *process_set, int64_t generation, hvd_process_set_h *out) {
    *out = nullptr;
    if (process_set == torch->global_set) return true;
    PyObject *gen = attr(process_set, torch->generation);
    int64_t g = -1;
    bool current = exact_i64(gen, &g) && g == generation;
    Py_XDECREF(gen);
    if (!current) return false;
    PyObject *handle = attr(process_set, torch->c_handle);
    int64_t h = 0;
    bool registered = exact_i64(handle, &h) && h != 0;
    Py_XDECREF(handle);
    *out = reinterpret_cast<hvd_process_set_h>(static_cast<intptr_t>(h));
    return registered;
}

// Op parameters from (average, name, op, prescale, postscale, process_set); name_buf holds
// the name, after kind's prefix. False when the generic path must check them.
bool op_params(PyObject *const *args, const Session &session, const char *kind,
               std::string *name_buf, hvd_op_params_t *params) {
    PyObject *average = args[0], *name = args[1], *op = args[2];
    std::memset(params, 0, sizeof(*params));
    int64_t reduce_op = HVD_OP_AVERAGE;
    if (average != Py_None || (op != Py_None && !exact_i64(op, &reduce_op)) ||
        !fast_op(static_cast<long>(reduce_op))) {
        return false;
    }
    params->field_mask = HVD_OP_FIELD_REDUCE_OP;
    params->reduce_op = static_cast<int32_t>(reduce_op);
    if (!scale(args[3], &params->prescale) || !scale(args[4], &params->postscale)) return false;
    if (params->prescale != 1.0 || params->postscale != 1.0) {
        params->field_mask |= HVD_OP_FIELD_SCALE;
    }
    if (!set_handle(args[5], session.generation, &params->process_set)) return false;
    if (params->process_set != nullptr) params->field_mask |= HVD_OP_FIELD_PROCESS_SET;
    if (name == Py_None) return true;
    if (!PyUnicode_CheckExact(name)) return false;
    Py_ssize_t len = 0;
    const char *text = PyUnicode_AsUTF8AndSize(name, &len);
    if (text == nullptr || std::strlen(text) != static_cast<size_t>(len)) {
        PyErr_Clear();
        return false;
    }
    // As Horovod: names are per kind of op.
    name_buf->assign(kind).append(".").append(text, static_cast<size_t>(len));
    params->field_mask |= HVD_OP_FIELD_NAME;
    params->name = name_buf->c_str();
    return true;
}

// allreduce(tensor, output, average, name, op, prescale, postscale, process_set): output is
// tensor (in place) or None (a new tensor like tensor). The handle, or None: use the generic
// path.
PyObject *allreduce(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "allreduce takes 8 arguments (%zd given)", nargs);
        return nullptr;
    }
    const Session &session = current_session();
    PyObject *tensor = args[0], *output = args[1];
    // Reused: the library copies the name during the enqueue.
    thread_local std::string name;
    hvd_op_params_t params;
    Tensor in;
    if (torch == nullptr || session.ctx == nullptr || (output != tensor && output != Py_None) ||
        !op_params(args + 2, session, "allreduce", &name, &params) || !describe(tensor, &in)) {
        Py_RETURN_NONE;
    }
    py::object result = py::reinterpret_borrow<py::object>(tensor);
    Tensor out;
    if (output == Py_None) {
        PyObject *fresh = PyObject_CallOneArg(torch->empty_like, tensor);
        if (fresh == nullptr) return nullptr;
        result = py::reinterpret_steal<py::object>(fresh);
        if (!describe(fresh, &out)) Py_RETURN_NONE;
    }
    hvd_request_h req = nullptr;
    hvd_status_t status = hvd_allreduce_enqueue(session.ctx, &in.t,
                                                output == Py_None ? &out.t : &in.t, &params, &req);
    // A failed enqueue changed nothing: the generic path repeats it and raises its error.
    if (status < 0) Py_RETURN_NONE;
    return guarded([&]() -> PyObject * {
        return add_pending(req, py::reinterpret_borrow<py::object>(tensor), py::none(),
                           std::move(result))
            .release()
            .ptr();
    });
}

// allreduce_now(tensor, average, name, op, prescale, postscale, process_set): allreduce_ of
// the common case, enqueued and waited for in one call: no Python runs between the enqueue and
// the wait, so the waiting caller runs the op itself (Engine::drive_while_waiting) before the
// engine thread, woken by the enqueue, can take it and hand the result back through a wake-up.
// tensor once reduced in place, or None: use the generic path.
PyObject *allreduce_now(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "allreduce_now takes 7 arguments (%zd given)", nargs);
        return nullptr;
    }
    const Session &session = current_session();
    PyObject *tensor = args[0];
    thread_local std::string name;
    hvd_op_params_t params;
    Tensor in;
    if (torch == nullptr || session.ctx == nullptr ||
        !op_params(args + 1, session, "allreduce", &name, &params) || !describe(tensor, &in)) {
        Py_RETURN_NONE;
    }
    hvd_request_h req = nullptr;
    if (hvd_allreduce_enqueue(session.ctx, &in.t, &in.t, &params, &req) < 0) Py_RETURN_NONE;
    return guarded([&]() -> PyObject * {
        hvd_status_t status = HVD_OK;
        if (wait_final(req, &status) != 0) {
            // Interrupted: the table keeps the request and the tensor until the op is done.
            add_pending(req, py::reinterpret_borrow<py::object>(tensor), py::none(), py::none());
            throw py::error_already_set();
        }
        std::string detail = status != HVD_OK ? request_message_text(req) : std::string();
        hvd_request_release(req);
        if (status != HVD_OK) raise_status(status, detail, true);
        return py::reinterpret_borrow<py::object>(tensor).release().ptr();
    });
}

// grouped_allreduce(tensors, in_place, average, name, op, prescale, postscale, process_set):
// tensors is a list or tuple; in_place True reduces into them, False into new tensors like
// them. The handle (its result: the list of outputs), or None: use the generic path.
PyObject *grouped_allreduce(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "grouped_allreduce takes 8 arguments (%zd given)", nargs);
        return nullptr;
    }
    const Session &session = current_session();
    PyObject *tensors = args[0], *in_place = args[1];
    std::string name;  // not shared: empty_like may run Python that enqueues
    hvd_op_params_t params;
    if (torch == nullptr || session.ctx == nullptr ||
        !(PyList_CheckExact(tensors) || PyTuple_CheckExact(tensors)) ||
        (in_place != Py_True && in_place != Py_False) ||
        !op_params(args + 2, session, "grouped_allreduce", &name, &params)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(tensors);
    if (count == 0 || count > INT32_MAX) Py_RETURN_NONE;
    size_t n = static_cast<size_t>(count);
    return guarded([&]() -> PyObject * {
        // Described before any output is made; the pointers stay valid (no resize after).
        std::vector<Tensor> ins(n), outs;
        py::list inputs(n);
        for (size_t i = 0; i < n; ++i) {
            PyObject *t = PySequence_Fast_GET_ITEM(tensors, static_cast<Py_ssize_t>(i));
            if (!describe(t, &ins[i])) return py::none().release().ptr();
            inputs[i] = py::reinterpret_borrow<py::object>(t);
        }
        py::list outputs = inputs;
        if (in_place == Py_False) {
            outs.resize(n);
            outputs = py::list(n);
            for (size_t i = 0; i < n; ++i) {
                PyObject *fresh = PyObject_CallOneArg(torch->empty_like, inputs[i].ptr());
                if (fresh == nullptr) throw py::error_already_set();
                outputs[i] = py::reinterpret_steal<py::object>(fresh);
                if (!describe(fresh, &outs[i])) return py::none().release().ptr();
            }
        }
        std::vector<const hvd_tensor_t *> pin(n), pout(n);
        for (size_t i = 0; i < n; ++i) {
            pin[i] = &ins[i].t;
            pout[i] = outs.empty() ? &ins[i].t : &outs[i].t;
        }
        hvd_request_h req = nullptr;
        hvd_status_t status = hvd_grouped_allreduce_enqueue(
            session.ctx, pin.data(), pout.data(), static_cast<int32_t>(count), &params, &req);
        // A failed enqueue changed nothing: the generic path repeats it and raises its error.
        if (status < 0) return py::none().release().ptr();
        py::object keep = outs.empty() ? py::object(inputs) : py::make_tuple(inputs, outputs);
        return add_pending(req, std::move(keep), py::none(), outputs).release().ptr();
    });
}

// register(tensor_type, strided, dtype_codes, empty_like, global_process_set)
PyObject *register_torch(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyType_Check(args[0]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "register(tensor_type, strided, dtype_codes: dict, empty_like, "
                        "global_process_set)");
        return nullptr;
    }
    Torch *t = torch != nullptr ? torch : new Torch();
    PyObject **slots[] = {&t->tensor_type, &t->strided, &t->dtype_codes, &t->empty_like,
                          &t->global_set};
    for (int i = 0; i < 5; ++i) {
        Py_INCREF(args[i]);
        Py_XSETREF(*slots[i], args[i]);
    }
    if (torch == nullptr) {
        PyObject **names[] = {&t->layout, &t->is_cpu, &t->is_contiguous, &t->data_ptr,
                              &t->dtype,  &t->shape,  &t->c_handle,      &t->generation};
        const char *texts[] = {"layout", "is_cpu", "is_contiguous", "data_ptr",
                               "dtype",  "shape",  "_c_handle",     "_generation"};
        for (int i = 0; i < 8; ++i) {
            *names[i] = PyUnicode_InternFromString(texts[i]);
            if (*names[i] == nullptr) return nullptr;
        }
        torch = t;
    }
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"allreduce", fastcall(allreduce), METH_FASTCALL,
     "allreduce(tensor, output, average, name, op, prescale, postscale, process_set) -> "
     "handle, or None when the generic path must run. output: tensor (in place) or None."},
    {"allreduce_now", fastcall(allreduce_now), METH_FASTCALL,
     "allreduce_now(tensor, average, name, op, prescale, postscale, process_set) -> tensor "
     "reduced in place (enqueued and waited for in one call), or None when the generic path "
     "must run."},
    {"grouped_allreduce", fastcall(grouped_allreduce), METH_FASTCALL,
     "grouped_allreduce(tensors, in_place, average, name, op, prescale, postscale, "
     "process_set) -> handle (its result: the list of outputs), or None when the generic path "
     "must run."},
    {"register", fastcall(register_torch), METH_FASTCALL,
     "register(tensor_type, strided, dtype_codes, empty_like, global_process_set): the torch "
     "and hvd objects the fast path compares against."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void add_torch_fast_path(py::module_ &m) {
    add_submodule(m, "torch_fast", "hvd.torch's allreduce and grouped allreduce in one call.",
                  methods);
}

}  // namespace hvd_py
