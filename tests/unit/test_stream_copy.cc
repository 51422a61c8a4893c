// SPDX-License-Identifier: Apache-2.0
// collectives::stream_copy and StreamCopies: every byte lands where memcpy would put it, at
// sizes below, at and above the size where streams start, with ragged tails and unaligned
// ends, and nothing outside the destinations is touched.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <random>
#include <utility>
#include <vector>

#include "collectives/stream_copy.h"

using hvd::collectives::stream_copy;

namespace {

constexpr unsigned char kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;

void check_copy(size_t bytes, size_t src_offset, size_t dst_offset, std::mt19937_64 &rng) {
    std::vector<unsigned char> src(bytes + src_offset);
    for (auto &b : src)
        b = static_cast<unsigned char>(rng());
    std::vector<unsigned char> dst(dst_offset + bytes + 2 * kGuardBytes, kGuard);
    unsigned char *out = dst.data() + kGuardBytes + dst_offset;
    stream_copy(out, src.data() + src_offset, bytes);
    for (size_t i = 0; i < bytes; ++i)
        if (out[i] != src[src_offset + i])
            fail_msg("%zu bytes (src +%zu, dst +%zu): byte %zu is %u, expected %u", bytes,
                     src_offset, dst_offset, i, out[i], src[src_offset + i]);
    for (size_t i = 0; i < kGuardBytes + dst_offset; ++i)
        assert_int_equal(dst[i], kGuard);
    for (size_t i = kGuardBytes + dst_offset + bytes; i < dst.size(); ++i)
        assert_int_equal(dst[i], kGuard);
}

void test_sizes_and_offsets(void **) {
    std::mt19937_64 rng(42);
    const size_t sizes[] = {0,         1,           127,         128,    32767,  32768,
                            32768 + 1, 32768 + 511, 32768 + 512, 100003, 262144, 1 << 20};
    for (size_t bytes : sizes)
        for (size_t src_offset : {0, 1, 8})
            for (size_t dst_offset : {0, 3, 64})
                check_copy(bytes, src_offset, dst_offset, rng);
}

// An empty tensor's buffers may be null: no copy of them at all (memcpy's pointers must not
// be null even for 0 bytes; the sanitized build, HVD_SANITIZE=address, fails on it).
void test_empty_null(void **) {
    stream_copy(nullptr, nullptr, 0);
    unsigned char src[4] = {1, 2, 3, 4}, dst[4] = {0, 0, 0, 0};
    {
        hvd::collectives::StreamCopies copies;
        copies.add(nullptr, nullptr, 0);
        copies.add(dst, src, sizeof src);
    }
    for (size_t i = 0; i < sizeof src; ++i)
        assert_int_equal(dst[i], src[i]);
}

// StreamCopies: a mix of short and long copies (held and interleaved, or done at once), with
// ragged lengths, each landing intact, and nothing else touched; finish() with 0-4 copies
// held, and the destructor finishing what is left.
void check_batch(const std::vector<size_t> &lengths, bool by_destructor) {
    std::mt19937_64 rng(7 + lengths.size());
    size_t total = 0;
    for (size_t len : lengths)
        total += len;
    std::vector<unsigned char> src(total);
    for (auto &b : src)
        b = static_cast<unsigned char>(rng());
    // Each copy goes to its own place, in reverse order, with a guard byte between.
    std::vector<unsigned char> dst(total + lengths.size(), kGuard);
    std::vector<std::pair<size_t, size_t>> placed;  // (dst offset, src offset) per copy
    {
        hvd::collectives::StreamCopies copies;
        size_t from = 0, to = dst.size();
        for (size_t len : lengths) {
            to -= len + 1;
            copies.add(dst.data() + to, src.data() + from, len);
            placed.emplace_back(to, from);
            from += len;
        }
        if (!by_destructor) copies.finish();
    }
    std::vector<bool> written(dst.size(), false);
    for (size_t i = 0; i < lengths.size(); ++i) {
        for (size_t j = 0; j < lengths[i]; ++j) {
            if (dst[placed[i].first + j] != src[placed[i].second + j])
                fail_msg("copy %zu of %zu bytes: byte %zu differs", i, lengths[i], j);
            written[placed[i].first + j] = true;
        }
    }
    for (size_t i = 0; i < dst.size(); ++i)
        if (!written[i]) assert_int_equal(dst[i], kGuard);
}

void test_batches(void **) {
    const std::vector<size_t> mixed = {0,   1,     128, 129,  4096,  4000,
                                       255, 40000, 3,   2048, 70000, 128 * 3};
    for (bool by_destructor : {false, true}) {
        check_batch(mixed, by_destructor);
        check_batch({}, by_destructor);
        check_batch({4000}, by_destructor);  // one held: a plain copy
        check_batch({1000, 130, 4096}, by_destructor);
        check_batch({100, 5000, 128, 7}, by_destructor);  // four held: interleaved at once
    }
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_and_offsets),
        cmocka_unit_test(test_empty_null),
        cmocka_unit_test(test_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
