// SPDX-License-Identifier: Apache-2.0
// hvd._hvd_pybind: the pybind11 backend of the hvd Python package.
//
// Implements the same functions, arguments, results and errors as hvd/_ctypes_backend.py (the
// contract is in hvd/_backend.py), calling libhvd's C ABI directly: handles are Python ints (0
// for NULL), tensors are (data pointer, dtype code, shape[, device type, device id[, ready
// event]]) tuples, and a failed call raises what hvd._errors.error_for(status, detail)
// returns. test() and wait() return statuses instead of raising. The GIL is released around the
// calls that can block (init, finalize, wait, process set creation and destruction).
//
// Beyond that contract, two submodules save the Python work per op: `requests`, the table of
// outstanding requests behind hvd's integer handles (request_table.h), and `torch_fast`,
// hvd.torch's allreduce of the common case in one call (torch_fast_path.cc).

#include "py_convert.h"
#include "request_table.h"
#include "torch_fast_path.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace hvd_py;

// ------------------------------------------------------------------ tensors and parameters

// Fills out from (data pointer, dtype code, shape tuple[, device type, device id[, ready
// event]]); a ready event that is None or 0 is none.
void make_tensor(py::handle desc_obj, Tensor *out) {
    py::object desc = to_sequence(desc_obj, "a tensor description");
    Py_ssize_t len = seq_size(desc);
    if (len < 3 || len > 6) {
        raise_invalid(
            "a tensor description has " + std::to_string(len) +
            " items; expected (data pointer, dtype, shape[, device type, device id[, ready "
            "event]])");
    }
    std::memset(&out->t, 0, sizeof(out->t));
    out->t.data = to_pointer(seq_item(desc, 0), "a tensor's data pointer");
    out->t.dtype = to_i32(seq_item(desc, 1), "a tensor's dtype");
    py::object shape = to_sequence(seq_item(desc, 2), "a tensor's shape");
    Py_ssize_t ndim = seq_size(shape);
    if (ndim > HVD_MAX_NDIM) {
        raise_invalid("a tensor has " + std::to_string(ndim) + " dimensions; at most " +
                      std::to_string(HVD_MAX_NDIM) + " are supported");
    }
    for (Py_ssize_t k = 0; k < ndim; ++k) {
        out->dims[k] = to_i64(seq_item(shape, k), "a tensor's dimension");
    }
    out->t.ndim = static_cast<int32_t>(ndim);
    out->t.shape = out->dims;
    out->t.device_type = len > 3 ? to_i32(seq_item(desc, 3), "a tensor's device type")
                                 : static_cast<int32_t>(HVD_DEVICE_CPU);
    out->t.device_id = len > 4 ? to_i32(seq_item(desc, 4), "a tensor's device id") : 0;
    if (len > 5) {
        py::handle event = seq_item(desc, 5);
        if (!event.is_none() && PyObject_IsTrue(event.ptr())) {
            out->t.field_mask |= HVD_TENSOR_FIELD_READY_EVENT;
            out->t.ready_event = to_pointer(event, "a tensor's ready event");
        }
    }
}

// The tensors of a list of descriptions; the vector is sized once, so pointers stay valid.
std::vector<Tensor> make_tensors(py::handle descs, const char *what) {
    py::object seq = to_sequence(descs, what);
    Py_ssize_t n = seq_size(seq);
    if (n > INT32_MAX) raise_invalid(std::string(what) + " has too many tensors");
    std::vector<Tensor> tensors(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i)
        make_tensor(seq_item(seq, i), &tensors[i]);
    return tensors;
}

// Pointers to the tensors, with at least one (NULL) slot so the array is never NULL.
std::vector<const hvd_tensor_t *> pointers(const std::vector<Tensor> &tensors) {
    std::vector<const hvd_tensor_t *> ptrs(tensors.size() > 0 ? tensors.size() : 1, nullptr);
    for (size_t i = 0; i < tensors.size(); ++i)
        ptrs[i] = &tensors[i].t;
    return ptrs;
}

// The single tensor of allreduce, broadcast, allgather, alltoall and reducescatter.
void single_tensor(py::handle descs, const std::string &kind, const char *which, Tensor *out) {
    if (descs.is_none()) raise_invalid(kind + " needs " + which + " (a list of one tensor)");
    py::object seq = to_sequence(descs, which);
    if (seq_size(seq) != 1) {
        raise_invalid(kind + " takes exactly one tensor in " + which + ", got " +
                      std::to_string(seq_size(seq)));
    }
    make_tensor(seq_item(seq, 0), out);
}

// ------------------------------------------------------------------ module functions

py::bytes get_unique_id() {
    hvd_unique_id_t uid;
    std::memset(&uid, 0, sizeof(uid));
    check(hvd_get_unique_id(&uid));
    return py::bytes(uid.internal, HVD_UNIQUE_ID_BYTES);
}

py::int_ init(py::object rank, py::object size, py::object unique_id, py::object timeout_ms) {
    hvd_init_params_t params;
    std::memset(&params, 0, sizeof(params));
    if (!rank.is_none()) {
        if (size.is_none()) raise_invalid("init: size is required when rank is given");
        params.field_mask |= HVD_INIT_FIELD_RANK;
        params.rank = to_i32(rank, "rank");
        params.size = to_i32(size, "size");
    }
    if (!unique_id.is_none()) {
        Py_buffer view;
        if (PyObject_GetBuffer(unique_id.ptr(), &view, PyBUF_SIMPLE) != 0) {
            PyErr_Clear();
            raise_invalid("unique_id must be bytes, got " + type_name(unique_id));
        }
        Py_ssize_t len = view.len;
        if (len == HVD_UNIQUE_ID_BYTES) {
            std::memcpy(params.unique_id.internal, view.buf, HVD_UNIQUE_ID_BYTES);
        }
        PyBuffer_Release(&view);
        if (len != HVD_UNIQUE_ID_BYTES) {
            raise_invalid("unique_id must be " + std::to_string(HVD_UNIQUE_ID_BYTES) +
                          " bytes, got " + std::to_string(len));
        }
        params.field_mask |= HVD_INIT_FIELD_UNIQUE_ID;
    }
    if (!timeout_ms.is_none()) {
        params.field_mask |= HVD_INIT_FIELD_TIMEOUT;
        params.timeout_ms = to_i64(timeout_ms, "timeout_ms");
    }
    hvd_context_h ctx = nullptr;
    hvd_status_t status;
    {
        py::gil_scoped_release release;
        status = hvd_init(&params, &ctx);
    }
    check(status);
    return from_pointer(ctx);
}

void finalize(py::handle ctx_obj) {
    hvd_context_h ctx = to_handle<hvd_context>(ctx_obj, "ctx");
    hvd_status_t status;
    {
        py::gil_scoped_release release;
        status = hvd_finalize(ctx);
    }
    check(status);
}

void abort_context(py::handle ctx, py::handle reason) {
    check(hvd_abort(to_handle<hvd_context>(ctx, "ctx"),
                    static_cast<hvd_status_t>(to_i32(reason, "reason"))));
}

py::tuple context_error(py::handle ctx) {
    hvd_status_t status = hvd_context_error(to_handle<hvd_context>(ctx, "ctx"));
    return py::make_tuple(static_cast<int>(status),
                          status < 0 ? decode(last_error_text()) : py::str(""));
}

template <typename Fn>
int32_t context_query(Fn fn, py::handle ctx) {
    int32_t out = 0;
    check(fn(to_handle<hvd_context>(ctx, "ctx"), &out));
    return out;
}

template <typename Fn>
int32_t set_query(Fn fn, py::handle ctx, py::handle ps) {
    int32_t out = 0;
    check(fn(to_handle<hvd_context>(ctx, "ctx"), to_handle<hvd_process_set>(ps, "ps"), &out));
    return out;
}

py::int_ process_set_create(py::handle ctx_obj, py::handle ranks_obj) {
    hvd_context_h ctx = to_handle<hvd_context>(ctx_obj, "ctx");
    py::object seq = to_sequence(ranks_obj, "ranks");
    Py_ssize_t n = seq_size(seq);
    if (n > INT32_MAX) raise_invalid("process_set_create: too many ranks");
    std::vector<int32_t> ranks(n > 0 ? static_cast<size_t>(n) : 1, 0);
    for (Py_ssize_t i = 0; i < n; ++i)
        ranks[i] = to_i32(seq_item(seq, i), "a rank");
    hvd_process_set_h ps = nullptr;
    hvd_status_t status;
    {
        py::gil_scoped_release release;
        status = hvd_process_set_create(ctx, ranks.data(), static_cast<int32_t>(n), &ps);
    }
    check(status);
    return from_pointer(ps);
}

void process_set_destroy(py::handle ctx_obj, py::handle ps_obj) {
    hvd_context_h ctx = to_handle<hvd_context>(ctx_obj, "ctx");
    hvd_process_set_h ps = to_handle<hvd_process_set>(ps_obj, "ps");
    hvd_status_t status;
    {
        py::gil_scoped_release release;
        status = hvd_process_set_destroy(ctx, ps);
    }
    check(status);
}

void timeline_start(py::handle ctx, py::handle path, py::handle mark_cycles) {
    int truth = PyObject_IsTrue(mark_cycles.ptr());
    if (truth < 0) throw py::error_already_set();
    check(hvd_timeline_start(to_handle<hvd_context>(ctx, "ctx"), to_utf8(path, "path"),
                             truth ? 1 : 0));
}

py::int_ enqueue(py::handle kind_obj, py::handle ctx_obj, py::handle ins, py::handle outs,
                 py::handle name, py::handle ps, py::handle op, double prescale, double postscale,
                 py::handle root, py::handle splits_obj, py::handle timeout_ms, py::handle stream) {
    if (!PyUnicode_Check(kind_obj.ptr())) {
        raise_invalid("unknown collective " + py::repr(kind_obj).cast<std::string>());
    }
    const std::string kind = kind_obj.cast<std::string>();
    hvd_context_h ctx = to_handle<hvd_context>(ctx_obj, "ctx");

    hvd_op_params_t params;
    std::memset(&params, 0, sizeof(params));
    if (!name.is_none()) {
        params.field_mask |= HVD_OP_FIELD_NAME;
        params.name = to_utf8(name, "name");
    }
    hvd_process_set_h set = to_handle<hvd_process_set>(ps, "ps");
    if (set != nullptr) {
        params.field_mask |= HVD_OP_FIELD_PROCESS_SET;
        params.process_set = set;
    }
    if (!op.is_none()) {
        params.field_mask |= HVD_OP_FIELD_REDUCE_OP;
        params.reduce_op = to_i32(op, "op");
    }
    if (prescale != 1.0 || postscale != 1.0) {
        params.field_mask |= HVD_OP_FIELD_SCALE;
        params.prescale = prescale;
        params.postscale = postscale;
    }
    if (!root.is_none()) {
        params.field_mask |= HVD_OP_FIELD_ROOT;
        params.root_rank = to_i32(root, "root");
    }
    std::vector<int32_t> splits;
    if (!splits_obj.is_none()) {
        py::object seq = to_sequence(splits_obj, "splits");
        Py_ssize_t n = seq_size(seq);
        if (n > INT32_MAX) raise_invalid("too many splits");
        splits.assign(n > 0 ? static_cast<size_t>(n) : 1, 0);
        for (Py_ssize_t i = 0; i < n; ++i)
            splits[i] = to_i32(seq_item(seq, i), "a split");
        params.field_mask |= HVD_OP_FIELD_SPLITS;
        params.splits = splits.data();
        params.num_splits = static_cast<int32_t>(n);
    }
    if (!timeout_ms.is_none()) {
        params.field_mask |= HVD_OP_FIELD_TIMEOUT;
        params.timeout_ms = to_i64(timeout_ms, "timeout_ms");
    }
    if (!stream.is_none()) {
        params.field_mask |= HVD_OP_FIELD_STREAM;
        params.stream = to_pointer(stream, "stream");
    }

    hvd_request_h req = nullptr;
    hvd_status_t status;
    if (kind == "barrier") {
        status = hvd_barrier_enqueue(ctx, &params, &req);
    } else if (kind == "join") {
        status = hvd_join_enqueue(ctx, &params, &req);
    } else if (kind == "allreduce" || kind == "broadcast" || kind == "allgather_into") {
        Tensor tin, tout;
        single_tensor(ins, kind, "ins", &tin);
        single_tensor(outs, kind, "outs", &tout);
        if (kind == "allreduce") {
            status = hvd_allreduce_enqueue(ctx, &tin.t, &tout.t, &params, &req);
        } else if (kind == "broadcast") {
            status = hvd_broadcast_enqueue(ctx, &tin.t, &tout.t, &params, &req);
        } else {
            status = hvd_allgather_into_enqueue(ctx, &tin.t, &tout.t, &params, &req);
        }
    } else if (kind == "allgather" || kind == "alltoall" || kind == "reducescatter") {
        Tensor tin;
        single_tensor(ins, kind, "ins", &tin);
        if (kind == "allgather") {
            status = hvd_allgather_enqueue(ctx, &tin.t, &params, &req);
        } else if (kind == "alltoall") {
            status = hvd_alltoall_enqueue(ctx, &tin.t, &params, &req);
        } else {
            status = hvd_reducescatter_enqueue(ctx, &tin.t, &params, &req);
        }
    } else if (kind == "grouped_allreduce" || kind == "grouped_allgather" ||
               kind == "grouped_reducescatter") {
        if (ins.is_none()) raise_invalid(kind + " needs ins (a list of tensors)");
        std::vector<Tensor> tin = make_tensors(ins, "ins");
        std::vector<const hvd_tensor_t *> pin = pointers(tin);
        int32_t n = static_cast<int32_t>(tin.size());
        if (kind == "grouped_allreduce") {
            if (outs.is_none()) raise_invalid(kind + " needs outs (a list of tensors)");
            std::vector<Tensor> tout = make_tensors(outs, "outs");
            if (tout.size() != tin.size()) {
                raise_invalid(kind + ": " + std::to_string(tin.size()) + " inputs but " +
                              std::to_string(tout.size()) + " outputs");
            }
            std::vector<const hvd_tensor_t *> pout = pointers(tout);
            status = hvd_grouped_allreduce_enqueue(ctx, pin.data(), pout.data(), n, &params, &req);
        } else if (kind == "grouped_allgather") {
            status = hvd_grouped_allgather_enqueue(ctx, pin.data(), n, &params, &req);
        } else {
            status = hvd_grouped_reducescatter_enqueue(ctx, pin.data(), n, &params, &req);
        }
    } else {
        raise_invalid("unknown collective " + py::repr(kind_obj).cast<std::string>());
    }
    check(status);
    return from_pointer(req);
}

int wait(py::handle req_obj, py::handle timeout_obj) {
    hvd_request_h req = to_handle<hvd_request>(req_obj, "req");
    int64_t timeout_ms = to_i64(timeout_obj, "timeout_ms");
    hvd_status_t status;
    {
        py::gil_scoped_release release;
        status = hvd_request_wait(req, timeout_ms);
    }
    return status;
}

py::tuple output(py::handle req_obj, py::handle i_obj) {
    hvd_request_h req = to_handle<hvd_request>(req_obj, "req");
    int32_t i = to_i32(i_obj, "i");
    hvd_tensor_t t;
    std::memset(&t, 0, sizeof(t));
    hvd_status_t status = hvd_request_output(req, i, &t);
    if (status != HVD_OK) {
        // Read this thread's last error before anything else can overwrite it.
        std::string detail = last_error_text();
        std::string message = request_message_text(req);
        raise_status(status, message.empty() ? detail : message, true);
    }
    py::tuple shape(t.ndim > 0 ? t.ndim : 0);
    for (int32_t k = 0; k < t.ndim; ++k)
        shape[k] = py::int_(t.shape[k]);
    return py::make_tuple(from_pointer(t.data), t.dtype, shape);
}

py::list received_splits(py::handle req_obj, py::handle n_obj) {
    hvd_request_h req = to_handle<hvd_request>(req_obj, "req");
    int32_t n = to_i32(n_obj, "n");
    std::vector<int32_t> splits(n > 0 ? static_cast<size_t>(n) : 1, 0);
    check(hvd_request_received_splits(req, splits.data(), n));
    py::list out(n);
    for (int32_t k = 0; k < n; ++k)
        out[k] = py::int_(splits[k]);
    return out;
}

int64_t value(py::handle req) {
    int64_t out = 0;
    check(hvd_request_value(to_handle<hvd_request>(req, "req"), &out));
    return out;
}

py::int_ mem_alloc(py::handle nbytes) {
    int64_t n = to_i64(nbytes, "nbytes");
    if (n < 0) raise_invalid("mem_alloc: nbytes is negative: " + std::to_string(n));
    void *p = nullptr;
    check(hvd_mem_alloc(static_cast<size_t>(n), &p));
    return from_pointer(p);
}

}  // namespace

PYBIND11_MODULE(_hvd_pybind, m) {
    m.doc() = "libhvd's C ABI through pybind11 (the contract is in hvd/_backend.py).";
    m.attr("NAME") = "pybind";
    m.attr("UNIQUE_ID_BYTES") = HVD_UNIQUE_ID_BYTES;

    m.def("version_code", []() { return static_cast<uint32_t>(hvd_version()); });
    m.def("version_string", []() { return std::string(hvd_version_string()); });
    m.def("features", []() { return static_cast<uint64_t>(hvd_features()); });
    m.def(
        "last_error", []() { return decode(last_error_text()); },
        "This thread's detail of the last failed libhvd call.");
    m.def("get_unique_id", &get_unique_id);
    m.def("init", &init, py::arg("rank") = py::none(), py::arg("size") = py::none(),
          py::arg("unique_id") = py::none(), py::arg("timeout_ms") = py::none(),
          "Joins the job; returns the context handle. Blocks (GIL released) until all ranks "
          "met.");
    m.def("finalize", &finalize, py::arg("ctx"));
    m.def("abort", &abort_context, py::arg("ctx"),
          py::arg("reason") = static_cast<int>(HVD_ERR_ABORTED));
    m.def("context_error", &context_error, py::arg("ctx"),
          "(status, detail) of the context: (0, \"\") while healthy.");
    m.def(
        "rank", [](py::handle ctx, py::handle ps) { return set_query(hvd_rank, ctx, ps); },
        py::arg("ctx"), py::arg("ps"));
    m.def(
        "size", [](py::handle ctx, py::handle ps) { return set_query(hvd_size, ctx, ps); },
        py::arg("ctx"), py::arg("ps"));
    m.def(
        "local_rank", [](py::handle ctx) { return context_query(hvd_local_rank, ctx); },
        py::arg("ctx"));
    m.def(
        "local_size", [](py::handle ctx) { return context_query(hvd_local_size, ctx); },
        py::arg("ctx"));
    m.def(
        "cross_rank", [](py::handle ctx) { return context_query(hvd_cross_rank, ctx); },
        py::arg("ctx"));
    m.def(
        "cross_size", [](py::handle ctx) { return context_query(hvd_cross_size, ctx); },
        py::arg("ctx"));
    m.def(
        "elastic_membership",
        [](py::handle ctx) {
            int64_t round = -1;
            int32_t pending = 0;
            check(hvd_elastic_membership(to_handle<hvd_context>(ctx, "ctx"), &round, &pending));
            return py::make_tuple(round, pending != 0);
        },
        py::arg("ctx"));
    m.def("process_set_create", &process_set_create, py::arg("ctx"), py::arg("ranks"));
    m.def("process_set_destroy", &process_set_destroy, py::arg("ctx"), py::arg("ps"));
    m.def(
        "process_set_included",
        [](py::handle ctx, py::handle ps) {
            return set_query(hvd_process_set_included, ctx, ps) != 0;
        },
        py::arg("ctx"), py::arg("ps"));
    m.def("timeline_start", &timeline_start, py::arg("ctx"), py::arg("path"),
          py::arg("mark_cycles"));
    m.def(
        "timeline_stop",
        [](py::handle ctx) { check(hvd_timeline_stop(to_handle<hvd_context>(ctx, "ctx"))); },
        py::arg("ctx"));
    m.def(
        "config_set",
        [](py::handle ctx, int32_t key, double value) {
            check(hvd_config_set(to_handle<hvd_context>(ctx, "ctx"), key, value));
        },
        py::arg("ctx"), py::arg("key"), py::arg("value"));
    m.def(
        "config_get",
        [](py::handle ctx, int32_t key) {
            double value = 0;
            check(hvd_config_get(to_handle<hvd_context>(ctx, "ctx"), key, &value));
            return value;
        },
        py::arg("ctx"), py::arg("key"));
    m.def("status_name", [](int32_t status) {
        return std::string(hvd_status_name(static_cast<hvd_status_t>(status)));
    });
    m.def("strerror", [](int32_t status) {
        return std::string(hvd_strerror(static_cast<hvd_status_t>(status)));
    });
    m.def("enqueue", &enqueue, py::arg("kind"), py::arg("ctx"), py::arg("ins"),
          py::arg("outs") = py::none(), py::arg("name") = py::none(), py::arg("ps") = py::none(),
          py::arg("op") = py::none(), py::arg("prescale") = 1.0, py::arg("postscale") = 1.0,
          py::arg("root") = py::none(), py::arg("splits") = py::none(),
          py::arg("timeout_ms") = py::none(), py::arg("stream") = py::none(),
          "Starts a collective; returns the request handle. ins/outs: lists of tensor "
          "descriptions (data pointer, dtype code, shape tuple[, device type, device id[, ready "
          "event]]); stream: a cudaStream_t (as an int) for ops on CUDA tensors.");
    m.def(
        "test",
        [](py::handle req) {
            return static_cast<int>(hvd_request_test(to_handle<hvd_request>(req, "req")));
        },
        py::arg("req"), "The request's status: INPROGRESS (1) while it runs. Never blocks.");
    m.def("wait", &wait, py::arg("req"), py::arg("timeout_ms"),
          "Blocks up to timeout_ms (GIL released); the final status or INPROGRESS.");
    m.def("output", &output, py::arg("req"), py::arg("i"),
          "(data pointer, dtype code, shape tuple) of output i of a completed request.");
    m.def("received_splits", &received_splits, py::arg("req"), py::arg("n"));
    m.def("value", &value, py::arg("req"));
    m.def(
        "message",
        [](py::handle req) {
            return decode(request_message_text(to_handle<hvd_request>(req, "req")));
        },
        py::arg("req"));
    m.def(
        "release",
        [](py::handle req) { check(hvd_request_release(to_handle<hvd_request>(req, "req"))); },
        py::arg("req"));
    m.def("mem_alloc", &mem_alloc, py::arg("nbytes"),
          "hvd_mem_alloc: the address of nbytes of memory the ranks of one host share.");
    m.def(
        "mem_free", [](py::handle p) { check(hvd_mem_free(to_pointer(p, "ptr"))); },
        py::arg("ptr"));
    add_request_table(m);
    add_torch_fast_path(m);
}
