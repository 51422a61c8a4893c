// SPDX-License-Identifier: Apache-2.0
// Where the library's GPU memory is freed: gpu::DeviceBuffer frees device memory in stream
// order on the stream of its last use when that is known (a grown fusion buffer, a context's
// buffers at teardown, a library-owned output its caller read on the op's stream) and with a
// wait for the whole device otherwise (an output of an op without a stream, or of a failed
// op), never waiting for the device where it need not. The table below logs each allocation
// and free with its device and stream; "memory" is host memory here. The GPU checks
// (scripts/gpu_check.sh) run the same code on a GPU.
#include <cmocka.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "assert_contains.h"
#include "common/error.h"
#include "engine/request.h"
#include "gpu/device_buffer.h"
#include "gpu/device_state.h"

namespace {

using hvd::gpu::DeviceBuffer;

struct Log {
    std::vector<std::string> calls;
    std::vector<void *> live;  // allocated and not yet freed
    bool fail_alloc = false, fail_free = false;
    char handles[64];  // streams and events: addresses inside it
    int made = 0;
};
Log g;

std::string name_of(void *stream) {
    if (stream == nullptr) return "default";
    return "s" + std::to_string(static_cast<char *>(stream) - g.handles);
}

void note(const std::string &line) {
    g.calls.push_back(line);
}

std::string device_bytes(int32_t device, size_t bytes) {
    return "device " + std::to_string(device) + ", " + std::to_string(bytes) + " bytes";
}

void set_err(hvd_gpu_err_t *err, const char *text) {
    std::strncpy(err->text, text, sizeof err->text - 1);
    err->text[sizeof err->text - 1] = '\0';
}

// Host memory standing for an allocation; it remembers its size, for the log.
void *take(size_t bytes) {
    void *p = std::malloc(bytes < sizeof(size_t) ? sizeof(size_t) : bytes);
    *static_cast<size_t *>(p) = bytes;
    g.live.push_back(p);
    return p;
}

// Frees an allocation and returns its size; a failed test for memory that is not live.
size_t forget(void *ptr) {
    for (size_t i = 0; i < g.live.size(); ++i)
        if (g.live[i] == ptr) {
            g.live.erase(g.live.begin() + static_cast<std::ptrdiff_t>(i));
            const size_t bytes = *static_cast<size_t *>(ptr);
            std::free(ptr);
            return bytes;
        }
    fail_msg("freeing memory that is not live");
    return 0;
}

int fake_device_alloc(int32_t device, size_t bytes, void *stream, void **ptr, hvd_gpu_err_t *err) {
    if (g.fail_alloc) {
        set_err(err, "cudaMallocAsync: out of memory (cudaErrorMemoryAllocation)");
        return 1;
    }
    *ptr = take(bytes);
    note("alloc " + device_bytes(device, bytes) + ", on " + name_of(stream));
    return 0;
}
int fake_device_free(int32_t device, void *ptr, hvd_gpu_err_t *err) {
    note("free " + device_bytes(device, forget(ptr)) + ", waiting");
    if (!g.fail_free) return 0;
    set_err(err, "cudaFree: an illegal memory access (cudaErrorIllegalAddress)");
    return 1;
}
int fake_device_free_on(int32_t device, void *ptr, void *stream, hvd_gpu_err_t *) {
    note("free " + device_bytes(device, forget(ptr)) + ", on " + name_of(stream));
    return 0;
}
int fake_host_alloc(int32_t device, size_t bytes, void **ptr, hvd_gpu_err_t *) {
    *ptr = take(bytes);
    note("pin " + device_bytes(device, bytes));
    return 0;
}
int fake_host_free(int32_t device, void *ptr, hvd_gpu_err_t *) {
    note("unpin " + device_bytes(device, forget(ptr)));
    return 0;
}
int fake_make(int32_t, void **handle, hvd_gpu_err_t *) {
    *handle = g.handles + 10 + g.made++;
    return 0;
}
int fake_destroy(int32_t, void *, hvd_gpu_err_t *) {
    return 0;
}
int fake_event_record(int32_t, void *, void *, hvd_gpu_err_t *) {
    return 0;
}
int fake_event_query(int32_t, void *, int32_t *done, hvd_gpu_err_t *) {
    *done = 1;  // the device has nothing left to run
    return 0;
}

hvd_gpu_module_t make_table() {
    hvd_gpu_module_t t;
    std::memset(&t, 0, sizeof t);
    t.device_alloc = fake_device_alloc;
    t.device_free = fake_device_free;
    t.device_free_on = fake_device_free_on;
    t.host_alloc = fake_host_alloc;
    t.host_free = fake_host_free;
    t.stream_create = fake_make;
    t.stream_destroy = fake_destroy;
    t.event_create = fake_make;
    t.event_destroy = fake_destroy;
    t.event_record = fake_event_record;
    t.event_query = fake_event_query;
    return t;
}
const hvd_gpu_module_t g_table = make_table();

hvd::gpu::GpuLibrary make_library() {
    hvd::gpu::GpuLibrary lib;
    lib.api = &g_table;
    lib.info.device_count = 2;
    return lib;
}

int reset(void **) {
    g.calls.clear();
    g.fail_alloc = g.fail_free = false;
    g.made = 0;
    return 0;
}

int all_freed(void **) {
    if (!g.live.empty()) {
        size_t n = g.live.size();
        for (void *p : g.live)
            std::free(p);
        g.live.clear();
        fail_msg("%zu allocations were never freed", n);
    }
    return 0;
}

void expect(const std::vector<std::string> &calls) {
    std::string got, want;
    for (const std::string &c : g.calls)
        got += c + "\n";
    for (const std::string &c : calls)
        want += c + "\n";
    if (got != want) fail_msg("calls:\n%s\nexpected:\n%s", got.c_str(), want.c_str());
    g.calls.clear();
}

void *stream(int i) {
    return g.handles + i;
}

// A fusion buffer grows on the stream that uses it: the old memory is freed in order there,
// not with a wait for the device; one large enough is kept.
void test_grows_in_stream_order(void **) {
    hvd::gpu::GpuLibrary lib = make_library();
    {
        DeviceBuffer b;
        b.reserve_device(&lib, 1, 100, stream(3));
        expect({"alloc device 1, 100 bytes, on s3"});
        b.reserve_device(&lib, 1, 60, stream(3));
        expect({});
        assert_int_equal(b.size(), 100);
        b.reserve_device(&lib, 1, 300, stream(3));
        expect({"free device 1, 100 bytes, on s3", "alloc device 1, 300 bytes, on s3"});
        b.reserve_device(&lib, 1, 400, nullptr);
        expect({"free device 1, 300 bytes, on default", "alloc device 1, 400 bytes, on default"});
        assert_int_equal(b.device(), 1);
        assert_int_equal(b.size(), 400);
        assert_non_null(b.data());
    }
    // Going out of scope, the buffer cannot know the stream of its last use.
    expect({"free device 1, 400 bytes, waiting"});
}

// Memory of another device or kind is not freed on this stream, which is not its device's.
void test_other_device_or_kind_waits(void **) {
    hvd::gpu::GpuLibrary lib = make_library();
    DeviceBuffer b;
    b.reserve_device(&lib, 0, 10, stream(1));
    b.reserve_device(&lib, 1, 5, stream(2));
    expect({"alloc device 0, 10 bytes, on s1", "free device 0, 10 bytes, waiting",
            "alloc device 1, 5 bytes, on s2"});
    b.reserve_pinned(&lib, 1, 5);
    expect({"free device 1, 5 bytes, waiting", "pin device 1, 5 bytes"});
    assert_true(b.kind() == DeviceBuffer::Kind::kPinnedHost);
    b.reserve_pinned(&lib, 0, 4);  // pinned memory serves every device
    expect({});
    b.reserve_device(&lib, 1, 8, stream(2));
    expect({"unpin device 1, 5 bytes", "alloc device 1, 8 bytes, on s2"});
    b.release_on(stream(4));
    expect({"free device 1, 8 bytes, on s4"});
    b.release_on(stream(4));  // nothing held: nothing freed
    b.release();
    expect({});
    b.reserve_pinned(&lib, 0, 3);
    b.release_on(stream(4));  // pinned memory has no stream order
    expect({"pin device 0, 3 bytes", "unpin device 0, 3 bytes"});
    assert_null(b.data());
    assert_int_equal(b.size(), 0);
}

// A failed allocation throws HVD_ERR_DEVICE with CUDA's message and leaves the buffer empty;
// a failed free is logged, and the buffer no longer holds the memory.
void test_failures(void **) {
    hvd::gpu::GpuLibrary lib = make_library();
    DeviceBuffer b;
    b.reserve_device(&lib, 0, 16, stream(1));
    g.fail_alloc = true;
    try {
        b.reserve_device(&lib, 0, 32, stream(1));
        fail_msg("a failed allocation was not reported");
    } catch (const hvd::Error &e) {
        assert_int_equal(e.status(), HVD_ERR_DEVICE);
        assert_contains(e.what(), "cudaMallocAsync");
        assert_contains(e.what(), "out of memory");
    }
    assert_null(b.data());
    assert_int_equal(b.size(), 0);
    expect({"alloc device 0, 16 bytes, on s1", "free device 0, 16 bytes, on s1"});
    g.fail_alloc = false;
    b.reserve_device(&lib, 0, 32, stream(1));
    g.fail_free = true;
    b.release();
    assert_null(b.data());
    expect({"alloc device 0, 32 bytes, on s1", "free device 0, 32 bytes, waiting"});
}

// A library-owned output of a request: freed on the caller's stream when the op succeeded with
// that stream waiting for it; otherwise (no stream, a failure) with a wait for the device.
void release_output(bool has_stream, hvd_status_t status) {
    hvd::gpu::GpuLibrary lib = make_library();
    hvd::engine::RequestPtr r = hvd::engine::make_request();
    r->device_output.reserve_device(&lib, 1, 24, stream(5));
    if (has_stream) {
        r->has_stream = true;
        r->stream = stream(7);
    }
    r->complete(status, status == HVD_OK ? "" : "rank 0: the op failed");
    r.reset();  // the last reference: the request goes back to the pool, reset
}

void test_output_freed_on_callers_stream(void **) {
    release_output(true, HVD_OK);
    expect({"alloc device 1, 24 bytes, on s5", "free device 1, 24 bytes, on s7"});
}

void test_output_without_stream_waits(void **) {
    release_output(false, HVD_OK);
    expect({"alloc device 1, 24 bytes, on s5", "free device 1, 24 bytes, waiting"});
}

void test_output_of_failed_op_waits(void **) {
    release_output(true, HVD_ERR_DEVICE);
    expect({"alloc device 1, 24 bytes, on s5", "free device 1, 24 bytes, waiting"});
}

// A context's device buffers are freed at teardown on the device's stream, before the stream
// goes; pinned staging is unpinned.
void test_teardown_on_the_devices_stream(void **) {
    hvd::gpu::GpuLibrary lib = make_library();
    void *s = nullptr;
    {
        hvd::gpu::DeviceStates states(&lib);
        hvd::gpu::DeviceState &dev = states.get(1);
        s = dev.stream;
        dev.fusion.reserve_device(&lib, 1, 40, dev.stream);
        dev.scratch.reserve_device(&lib, 1, 8, dev.stream);
        dev.staging.reserve_pinned(&lib, 1, 16);
        g.calls.clear();
    }
    const std::string on = name_of(s);
    expect({"free device 1, 40 bytes, on " + on, "free device 1, 8 bytes, on " + on,
            "unpin device 1, 16 bytes"});
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grows_in_stream_order, reset, all_freed),
        cmocka_unit_test_setup_teardown(test_other_device_or_kind_waits, reset, all_freed),
        cmocka_unit_test_setup_teardown(test_failures, reset, all_freed),
        cmocka_unit_test_setup_teardown(test_output_freed_on_callers_stream, reset, all_freed),
        cmocka_unit_test_setup_teardown(test_output_without_stream_waits, reset, all_freed),
        cmocka_unit_test_setup_teardown(test_output_of_failed_op_waits, reset, all_freed),
        cmocka_unit_test_setup_teardown(test_teardown_on_the_devices_stream, reset, all_freed),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
