// SPDX-License-Identifier: Apache-2.0
// engine::Shape, the small-buffer dimension list: inline and heap shapes, every way of copying
// and moving between the two, and comparison, each checked against a std::vector of the same
// dimensions.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <utility>
#include <vector>

#include "util/shape.h"

using hvd::util::Shape;

namespace {

std::vector<int64_t> dims_of(size_t n, int64_t base) {
    std::vector<int64_t> v;
    for (size_t i = 0; i < n; ++i)
        v.push_back(base + static_cast<int64_t>(i) * 7);
    return v;
}

void assert_holds(const Shape &s, const std::vector<int64_t> &want) {
    assert_int_equal(s.size(), want.size());
    assert_int_equal(s.empty(), want.empty());
    for (size_t i = 0; i < want.size(); ++i)
        assert_int_equal(s[i], want[i]);
    assert_int_equal(s.end() - s.begin(), want.size());
}

// Sizes on both sides of the inline capacity, copied and moved into shapes of every size.
void test_copy_and_move_across_sizes(void **) {
    const size_t sizes[] = {
        0, 1, Shape::kInlineDims - 1, Shape::kInlineDims, Shape::kInlineDims + 1, 32};
    for (size_t from : sizes) {
        for (size_t to : sizes) {
            std::vector<int64_t> a = dims_of(from, 3), b = dims_of(to, 100);
            Shape src(a), dst(b);
            assert_holds(src, a);
            assert_holds(dst, b);
            dst = src;  // copy assignment
            assert_holds(dst, a);
            assert_holds(src, a);
            Shape copied(src);
            assert_holds(copied, a);
            Shape target(b);
            target = std::move(copied);  // move assignment
            assert_holds(target, a);
            assert_int_equal(copied.size(), 0);
            Shape moved(std::move(target));
            assert_holds(moved, a);
            // The copy owns its dimensions: changing the source leaves it alone.
            if (from > 0) {
                src[0] = -1;
                assert_int_equal(dst[0], a[0]);
            }
        }
    }
}

void test_self_assignment_and_assign_from_itself(void **) {
    for (size_t n : {size_t{2}, Shape::kInlineDims + 3}) {
        std::vector<int64_t> a = dims_of(n, 5);
        Shape s(a);
        Shape &alias = s;
        s = alias;
        assert_holds(s, a);
        s = std::move(alias);
        assert_holds(s, a);
        s.assign(s.begin() + 1, s.end());  // a range inside the shape itself
        assert_holds(s, std::vector<int64_t>(a.begin() + 1, a.end()));
    }
}

void test_compare(void **) {
    Shape a{4, 3}, b{4, 3}, c{4, 2}, d{4, 3, 1};
    assert_true(a == b);
    assert_false(a != b);
    assert_true(a != c);
    assert_true(a != d);
    assert_true(Shape() == Shape(std::vector<int64_t>{}));
    std::vector<int64_t> long_dims = dims_of(20, 1);
    assert_true(Shape(long_dims) == Shape(long_dims));
    long_dims.back() = 0;
    assert_true(Shape(long_dims) != Shape(dims_of(20, 1)));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_and_move_across_sizes),
        cmocka_unit_test(test_self_assignment_and_assign_from_itself),
        cmocka_unit_test(test_compare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
