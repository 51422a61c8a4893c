// SPDX-License-Identifier: Apache-2.0
// The pybind11 backend's table of handles (bindings/python/handle_map.h): handles in order,
// found and erased in any order, handles left behind by the window still found, and
// everything taken out at once.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <memory>
#include <vector>

#include "../../bindings/python/handle_map.h"

namespace {

using Map = hvd_py::HandleMap<int>;

void test_in_and_out_of_order(void **) {
    Map m(1, 8);
    std::vector<int64_t> h;
    for (int i = 0; i < 6; ++i)
        h.push_back(m.add(std::make_shared<int>(i)));
    for (int i = 0; i < 6; ++i)
        assert_int_equal(h[i], i + 1);
    assert_true(m.erase(h[2]));
    assert_false(m.erase(h[2]));
    assert_null(m.find(h[2]).get());
    assert_true(m.erase(h[0]));
    assert_int_equal(*m.find(h[1]), 1);
    assert_int_equal(*m.find(h[5]), 5);
    assert_null(m.find(7).get());  // not handed out yet
    assert_null(m.find(0).get());
    assert_int_equal(m.size(), 4);
    assert_int_equal(m.add(std::make_shared<int>(6)), 7);
}

// A handle never erased while many more come and go: it leaves the window and is still found,
// and the window stays bounded.
void test_straggler(void **) {
    Map m(1, 16);
    int64_t first = m.add(std::make_shared<int>(-1));
    for (int i = 0; i < 1000; ++i) {
        int64_t h = m.add(std::make_shared<int>(i));
        if (i % 7 == 3) continue;  // a few more stragglers
        assert_true(m.erase(h));
    }
    assert_int_equal(*m.find(first), -1);
    assert_int_equal(m.size(), 1 + 1000 / 7 + (1000 % 7 > 3 ? 1 : 0));
    assert_int_equal(*m.find(first + 1 + 3), 3);
    assert_true(m.erase(first));
    assert_false(m.erase(first));
    assert_null(m.find(first).get());
}

void test_take_all(void **) {
    Map m(5, 4);
    for (int i = 0; i < 10; ++i)
        m.add(std::make_shared<int>(i));
    assert_true(m.erase(9));
    std::vector<std::shared_ptr<int>> out;
    m.take_all(&out);
    assert_int_equal(out.size(), 9);
    int sum = 0;
    for (const auto &v : out)
        sum += *v;
    assert_int_equal(sum, 45 - 4);
    assert_int_equal(m.size(), 0);
    assert_null(m.find(5).get());
    assert_int_equal(m.add(std::make_shared<int>(0)), 15);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_and_out_of_order),
        cmocka_unit_test(test_straggler),
        cmocka_unit_test(test_take_all),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
