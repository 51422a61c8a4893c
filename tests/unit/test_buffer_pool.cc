// SPDX-License-Identifier: Apache-2.0
// The pool of large library-owned buffers: a released block is reused by the next request of
// a similar size (same memory, no new pages), not by a much smaller one, and OwnedBuffer
// hands its block back when it is resized or destroyed.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cstring>

#include "engine/buffer_pool.h"
#include "engine/request.h"

namespace {

using hvd::engine::kPoolMinBytes;
using hvd::engine::OwnedBuffer;
using hvd::engine::pool_give;
using hvd::engine::pool_take;
using hvd::engine::PooledBlock;

constexpr size_t kMiB = size_t{1} << 20;

void test_released_block_is_reused(void **) {
    PooledBlock a = pool_take(3 * kMiB);
    assert_non_null(a.data);
    assert_true(a.capacity >= 3 * kMiB);
    assert_int_equal(reinterpret_cast<uintptr_t>(a.data) % (2 * kMiB), 0);
    std::memset(a.data, 0x5a, 3 * kMiB);  // the whole capacity asked for is usable
    pool_give(a);
    PooledBlock b = pool_take(3 * kMiB);
    assert_ptr_equal(b.data, a.data);
    // A block over twice the size asked for stays in the pool for a larger request.
    pool_give(b);
    PooledBlock small = pool_take(kPoolMinBytes);
    assert_ptr_not_equal(small.data, a.data);
    PooledBlock again = pool_take(2 * kMiB + 1);
    assert_ptr_equal(again.data, a.data);
    pool_give(small);
    pool_give(again);
}

void test_owned_buffer_returns_its_block(void **) {
    char *first;
    {
        OwnedBuffer buf;
        buf.resize(5 * kMiB);
        first = buf.data();
        std::memset(buf.data(), 1, buf.size());
        assert_int_equal(buf.size(), 5 * kMiB);
    }
    OwnedBuffer next;
    next.resize(5 * kMiB);
    assert_ptr_equal(next.data(), first);
    next.resize(100);  // small: plain allocation; the large block goes back
    assert_int_equal(next.size(), 100);
    next.resize_zeroed(5 * kMiB);
    assert_ptr_equal(next.data(), first);
    for (size_t i = 0; i < next.size(); i += 4096)
        assert_int_equal(next.data()[i], 0);
    next.resize(0);
    assert_null(next.data());
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_released_block_is_reused),
        cmocka_unit_test(test_owned_buffer_returns_its_block),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
