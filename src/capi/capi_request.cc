// SPDX-License-Identifier: Apache-2.0
// Request completion: test, wait, output, message, release.
#include <vector>

#include "capi/guard.h"
#include "capi/handles.h"
#include "common/scoped_count.h"

using hvd::strprintf;
using hvd::capi::fail;
using hvd::capi::guarded;

namespace {

hvd_status_t finished_status(const hvd::engine::Request &req, const char *fn) {
    hvd_status_t s = req.status();
    if (s < 0) hvd::set_last_error(strprintf("%s: %s", fn, req.message().c_str()));
    return s;
}

// The tensor a completed single op produced: library-owned or the caller's.
hvd_tensor_t output_of(const hvd::engine::Request &r) {
    hvd_tensor_t t{};
    t.device_type = HVD_DEVICE_CPU;
    bool library_owned = (r.meta.type == hvd::engine::OpType::kAllgather && r.meta.out_rows < 0) ||
                         r.meta.type == hvd::engine::OpType::kAlltoall ||
                         r.meta.type == hvd::engine::OpType::kReducescatter;
    const hvd::engine::TensorRef &ref = library_owned ? r.input : r.output;
    t.dtype = ref.dtype;
    t.device_id = ref.device_id;
    if (library_owned && r.device_output.data() != nullptr) {
        t.device_type = HVD_DEVICE_CUDA;
        t.device_id = r.device_output.device();
        t.data = r.device_output.data();
        t.ndim = static_cast<int32_t>(r.owned_shape.size());
        t.shape = r.owned_shape.data();
    } else if (library_owned) {
        t.data = const_cast<char *>(r.owned_data.data());
        t.ndim = static_cast<int32_t>(r.owned_shape.size());
        t.shape = r.owned_shape.data();
    } else {
        t.device_type = ref.device_type;
        t.data = ref.data;
        t.ndim = static_cast<int32_t>(ref.shape.size());
        t.shape = ref.shape.data();
    }
    return t;
}

// Freed request handles of this thread, reused by its next enqueues (no lock: a handle freed
// by another thread goes to that thread's list). Bounded; the rest go back to the allocator,
// and so does the list when its thread ends. Handles freed after that (by a later destructor
// of the ending thread) go straight to the allocator.
thread_local bool handle_cache_gone = false;

struct HandleCache {
    static constexpr size_t kMax = 4096;
    std::vector<void *> free;
    ~HandleCache() {
        handle_cache_gone = true;
        for (void *p : free)
            ::operator delete(p);
    }
};

HandleCache *handle_cache() {
    if (handle_cache_gone) return nullptr;
    thread_local HandleCache cache;
    return &cache;
}

}  // namespace

void *hvd_request::operator new(size_t bytes) {
    HandleCache *c = handle_cache();
    if (c != nullptr && bytes == sizeof(hvd_request) && !c->free.empty()) {
        void *p = c->free.back();
        c->free.pop_back();
        return p;
    }
    return ::operator new(bytes);
}

void hvd_request::operator delete(void *p, size_t bytes) noexcept {
    if (p == nullptr) return;
    HandleCache *c = handle_cache();
    if (c != nullptr && bytes == sizeof(hvd_request) && c->free.size() < HandleCache::kMax) {
        try {
            c->free.push_back(p);
            return;
        } catch (...) {  // no room to remember it: free it below
        }
    }
    ::operator delete(p);
}

extern "C" {

HVD_API hvd_status_t hvd_request_test(hvd_request_h req) noexcept {
    return guarded("hvd_request_test", [&] {
        if (req == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_request_test: req is NULL");
        return finished_status(*req->req, "hvd_request_test");
    });
}

HVD_API hvd_status_t hvd_request_wait(hvd_request_h req, int64_t timeout_ms) noexcept {
    return guarded("hvd_request_wait", [&] {
        if (req == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_request_wait: req is NULL");
        // Finished already (the rest of a fused run, usually): no deadline, no lock.
        if (req->req->status() != HVD_INPROGRESS)
            return finished_status(*req->req, "hvd_request_wait");
        // A wait with no limit of its own still ends when the op's own deadline does.
        hvd::Deadline d =
            timeout_ms < 0 ? req->req->completion_bound() : hvd::Deadline::after_ms(timeout_ms);
        hvd::ScopedCount waiting(req->waiters);  // hvd_request_release refuses meanwhile
        if (std::shared_ptr<hvd::engine::Engine> e = req->engine.lock())
            e->drive_while_waiting(*req->req, d);
        req->req->wait(d);
        return finished_status(*req->req, "hvd_request_wait");
    });
}

HVD_API hvd_status_t hvd_request_output(hvd_request_h req, int32_t i,
                                        hvd_tensor_t *out_p) noexcept {
    return guarded("hvd_request_output", [&] {
        if (req == nullptr || out_p == nullptr)
            return fail(HVD_ERR_INVALID_ARG, "hvd_request_output: NULL argument");
        hvd::engine::Request &r = *req->req;
        hvd_status_t s = finished_status(r, "hvd_request_output");
        if (s != HVD_OK) return s;
        size_t outputs = r.members.empty() ? 1 : r.members.size();
        if (i < 0 || static_cast<size_t>(i) >= outputs)
            return fail(HVD_ERR_INVALID_ARG,
                        strprintf("hvd_request_output: index %d, this request has %zu output(s)", i,
                                  outputs));
        const hvd::engine::Request &one = r.members.empty() ? r : *r.members[i];
        if (one.meta.type == hvd::engine::OpType::kBarrier ||
            one.meta.type == hvd::engine::OpType::kJoin)
            return fail(HVD_ERR_INVALID_ARG, "hvd_request_output: this request has no output");
        *out_p = output_of(one);
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_request_received_splits(hvd_request_h req, int32_t *splits,
                                                 int32_t n) noexcept {
    return guarded("hvd_request_received_splits", [&] {
        if (req == nullptr || splits == nullptr)
            return fail(HVD_ERR_INVALID_ARG, "hvd_request_received_splits: NULL argument");
        hvd::engine::Request &r = *req->req;
        if (r.meta.type != hvd::engine::OpType::kAlltoall)
            return fail(HVD_ERR_INVALID_ARG,
                        "hvd_request_received_splits: the request is not an alltoall");
        hvd_status_t s = finished_status(r, "hvd_request_received_splits");
        if (s != HVD_OK) return s;
        if (n != static_cast<int32_t>(r.received_splits.size()))
            return fail(HVD_ERR_INVALID_ARG,
                        strprintf("hvd_request_received_splits: n is %d, the set has %zu ranks", n,
                                  r.received_splits.size()));
        for (int32_t i = 0; i < n; ++i)
            splits[i] = r.received_splits[i];
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_request_value(hvd_request_h req, int64_t *value_p) noexcept {
    return guarded("hvd_request_value", [&] {
        if (req == nullptr || value_p == nullptr)
            return fail(HVD_ERR_INVALID_ARG, "hvd_request_value: NULL argument");
        hvd::engine::Request &r = *req->req;
        if (r.meta.type != hvd::engine::OpType::kJoin)
            return fail(HVD_ERR_INVALID_ARG, "hvd_request_value: only a join has a value");
        hvd_status_t s = finished_status(r, "hvd_request_value");
        if (s != HVD_OK) return s;
        *value_p = r.value;
        return HVD_OK;
    });
}

HVD_API size_t hvd_request_message(hvd_request_h req, char *buf, size_t len) noexcept {
    if (req == nullptr) return hvd::capi::copy_out("", buf, len);
    try {
        return hvd::capi::copy_out(req->req->message(), buf, len);
    } catch (...) {
        return hvd::capi::copy_out("", buf, len);
    }
}

HVD_API hvd_status_t hvd_request_release(hvd_request_h req) noexcept {
    return guarded("hvd_request_release", [&] {
        if (req == nullptr) return fail(HVD_ERR_INVALID_ARG, "hvd_request_release: req is NULL");
        if (req->waiters.load() != 0)
            return fail(HVD_ERR_BUSY, "hvd_request_release: another thread waits on it");
        delete req;
        return HVD_OK;
    });
}

}  // extern "C"
