// SPDX-License-Identifier: Apache-2.0
#include "engine/request.h"

#include <new>

#include "common/dtype.h"
#include "engine/buffer_pool.h"

namespace hvd::engine {

void OwnedBuffer::release() {
    if (pooled_capacity_ > 0) {
        pool_give(PooledBlock{data_, pooled_capacity_});
    } else {
        std::free(data_);
    }
    data_ = nullptr;
    size_ = 0;
    pooled_capacity_ = 0;
}

void OwnedBuffer::resize(size_t n) {
    release();
    if (n == 0) return;
    if (n >= kPoolMinBytes) {
        PooledBlock b = pool_take(n);
        data_ = b.data;
        pooled_capacity_ = b.capacity;
    } else {
        constexpr size_t kAlign = 64;
        data_ = static_cast<char *>(std::aligned_alloc(kAlign, (n + kAlign - 1) / kAlign * kAlign));
        if (data_ == nullptr) throw std::bad_alloc();
    }
    size_ = n;
}

namespace {

// Field by field, with the defaults of the structs' declarations: assigning fresh structs
// (~600 bytes built and torn down per request) made a release cost more than reusing the
// request saved. Each size check is a reminder to reset a field added to the struct.
#if defined(__x86_64__) && defined(__GLIBCXX__) && _GLIBCXX_USE_CXX11_ABI
#define HVD_CHECK_RESET_SIZE(type, bytes) \
    static_assert(sizeof(type) == (bytes), "a field was added to " #type ": reset it here")
#else
#define HVD_CHECK_RESET_SIZE(type, bytes)
#endif

void reset_meta(OpMeta &m) {
    HVD_CHECK_RESET_SIZE(OpMeta, 232);
    m.name.clear();  // keeps its storage: the next name is copied into it
    m.set_id = 0;
    m.type = OpType::kAllreduce;
    m.dtype = 0;
    m.shape.clear();
    m.device_type = 1;
    m.device_key = 0;
    m.nccl_ok = false;
    m.reduce_op = 0;
    m.root = 0;
    m.prescale = 1.0;
    m.postscale = 1.0;
    m.splits.clear();
    m.group.clear();
    m.group_size = 0;
    m.out_rows = -1;
    m.in_row = -1;
}

void reset_tensor(TensorRef &t) {
    HVD_CHECK_RESET_SIZE(TensorRef, 96);
    t.data = nullptr;
    t.dtype = 0;
    t.shape.clear();
    t.device_type = HVD_DEVICE_CPU;
    t.device_id = 0;
    t.ready_event = nullptr;
}

}  // namespace

void RequestData::reset() {
    HVD_CHECK_RESET_SIZE(RequestData, 680);
    reset_meta(meta);
    reset_tensor(input);
    reset_tensor(output);
    deadline = Deadline();
    stream = nullptr;
    has_stream = false;
    stream_mark.release();
    traced = false;
    in_flight = nullptr;
    pending_slot = kNotPending;
    owned_data.resize(0);
    device_output.release();
    owned_shape.clear();
    received_splits.clear();
    members.clear();
    parent.reset();
    value = 0;
}

void Request::reset_for_reuse() {
    // A CUDA output of an op that ended with the caller's stream waiting for it is read there:
    // freed in order on that stream, with no wait for the device. Otherwise (no stream, a
    // failed op) reset() frees it once the device's work is done, as cudaFree does.
    if (has_stream && status_.load(std::memory_order_acquire) == HVD_OK)
        device_output.release_on(stream);
    reset();
    status_.store(HVD_INPROGRESS, std::memory_order_relaxed);
    sleepers_.store(0, std::memory_order_relaxed);
    message_.clear();
    members_done_ = 0;
    first_member_error_ = HVD_OK;
    first_member_message_.clear();
}

size_t TensorRef::elements() const {
    size_t n = 1;
    for (int64_t d : shape)
        n *= static_cast<size_t>(d);
    return n;
}

size_t TensorRef::bytes() const {
    return elements() * dtype_size(dtype);
}

bool Request::settle(hvd_status_t status, const std::string &message) {
    hvd_status_t expected = HVD_INPROGRESS;
    if (message.empty()) return status_.compare_exchange_strong(expected, status);
    // A reader that sees the status then takes mu_ for the message: publish both under it.
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.compare_exchange_strong(expected, status)) return false;
    message_ = message;
    return true;
}

void Request::notify() {
    // A sleeper counts itself before it tests the status, and settle() published the status
    // before this reads the count (both sequentially consistent): either the sleeper sees the
    // status, or this sees the sleeper and takes mu_, which the sleeper holds until it waits.
    if (sleepers_.load() == 0) return;
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
}

void Request::member_done(hvd_status_t status, const std::string &message) {
    hvd_status_t final_status;
    std::string final_message;
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (status != HVD_OK && first_member_error_ == HVD_OK) {
            first_member_error_ = status;
            first_member_message_ = message;
        }
        if (++members_done_ < members.size()) return;
        final_status = first_member_error_;
        final_message = first_member_message_;
    }
    complete(final_status, final_message);
}

Deadline Request::completion_bound() const {
    constexpr int64_t kNoticeGraceMs = 10000;
    if (deadline.infinite()) return Deadline::never();
    return Deadline::after_ms(deadline.remaining_ms(INT64_MAX / 2) + kNoticeGraceMs);
}

hvd_status_t Request::status() const {
    return status_.load(std::memory_order_acquire);
}

std::string Request::message() const {
    std::lock_guard<std::mutex> lock(mu_);
    return message_;
}

hvd_status_t Request::wait(const Deadline &until) {
    hvd_status_t s = status();
    if (s != HVD_INPROGRESS) return s;
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.fetch_add(1);
    auto done = [this] { return status_.load() != HVD_INPROGRESS; };
    if (until.infinite())
        cv_.wait(lock, done);
    else
        cv_.wait_until(lock, until.at(), done);
    sleepers_.fetch_sub(1);
    return status();
}

}  // namespace hvd::engine
