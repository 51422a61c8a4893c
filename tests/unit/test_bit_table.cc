// SPDX-License-Identifier: Apache-2.0
// engine::BitTable against std::map: random adds, finds and removes over sparse and dense
// keys, iteration, clear; a removed value is released at once (the engine's values hold
// requests).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <map>
#include <memory>
#include <random>

#include "util/bit_table.h"

using hvd::util::BitTable;

namespace {

void assert_same(BitTable<int> &t, std::map<uint32_t, int> &ref) {
    assert_int_equal(t.size(), ref.size());
    assert_int_equal(t.empty(), ref.empty());
    size_t seen = 0;
    t.for_each([&](uint32_t key, int &v) {
        auto it = ref.find(key);
        assert_true(it != ref.end());
        assert_int_equal(v, it->second);
        ++seen;
    });
    assert_int_equal(seen, ref.size());
    if (!ref.empty()) assert_true(ref.count(t.any_key()) == 1);
}

void test_matches_a_map(void **) {
    std::mt19937 rng(7);
    BitTable<int> t;
    std::map<uint32_t, int> ref;
    for (int step = 0; step < 50000; ++step) {
        // Mostly keys below 300 (a cache's bits), sometimes far larger ones.
        uint32_t key = rng() % 10 == 0 ? rng() % 65536 : rng() % 300;
        switch (rng() % 3) {
            case 0: {
                int v = static_cast<int>(rng() % 1000);
                bool added = t.try_emplace(key, v);
                assert_int_equal(added, ref.count(key) == 0);
                if (added) ref[key] = v;
                break;
            }
            case 1: {
                int *v = t.find(key);
                auto it = ref.find(key);
                assert_int_equal(v != nullptr, it != ref.end());
                if (v) assert_int_equal(*v, it->second);
                break;
            }
            default:
                t.erase(key);
                ref.erase(key);
        }
        if (step % 1000 == 0) assert_same(t, ref);
    }
    assert_same(t, ref);
    t.clear();
    ref.clear();
    assert_same(t, ref);
    assert_null(t.find(5));
    assert_true(t.try_emplace(5, 1));  // usable after clear
    assert_int_equal(*t.find(5), 1);
}

void test_values_released(void **) {
    BitTable<std::shared_ptr<int>> t;
    auto a = std::make_shared<int>(1), b = std::make_shared<int>(2);
    assert_true(t.try_emplace(3, a));
    assert_true(t.try_emplace(9, b));
    assert_false(t.try_emplace(3, b));  // taken: nothing stored
    assert_int_equal(a.use_count(), 2);
    assert_int_equal(b.use_count(), 2);
    t.erase(3);
    assert_int_equal(a.use_count(), 1);
    assert_null(t.find(3));
    assert_ptr_equal(t.find(9)->get(), b.get());
    t.clear();
    assert_int_equal(b.use_count(), 1);
    assert_true(t.empty());
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_a_map),
        cmocka_unit_test(test_values_released),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
