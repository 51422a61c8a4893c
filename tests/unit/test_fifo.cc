// engine::Fifo against std::deque: random pushes and pops (with long stretches that never
// empty, so the front is compacted away), indexing from the front, clear, and a move-only
// element type.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <deque>
#include <memory>
#include <random>
#include <string>

#include "engine/fifo.h"

using hvd::engine::Fifo;

namespace {

void assert_same(Fifo<std::string> &f, const std::deque<std::string> &ref) {
    assert_int_equal(f.size(), ref.size());
    assert_int_equal(f.empty(), ref.empty());
    for (size_t i = 0; i < ref.size(); ++i)
        assert_true(f[i] == ref[i]);
    if (!ref.empty()) {
        assert_true(f.front() == ref.front());
        assert_true(f.back() == ref.back());
    }
}

void test_matches_a_deque(void **) {
    std::mt19937 rng(42);
    Fifo<std::string> f;
    std::deque<std::string> ref;
    int next = 0;
    for (int step = 0; step < 20000; ++step) {
        // Phases that grow (pushes outnumber pops: the front is compacted, never emptied)
        // and phases that drain (the queue empties and starts over).
        bool grow = (step / 2000) % 2 == 0;
        bool push = ref.empty() || rng() % 100 < (grow ? 60u : 35u);
        if (push) {
            std::string v = "value number " + std::to_string(next++);  // heap-allocated
            f.push_back(v);
            ref.push_back(v);
        } else {
            f.pop_front();
            ref.pop_front();
        }
        if (step % 97 == 0) assert_same(f, ref);
    }
    assert_same(f, ref);
    f.clear();
    assert_true(f.empty());
    assert_int_equal(f.size(), 0);
}

void test_move_only_elements(void **) {
    Fifo<std::unique_ptr<int>> f;
    for (int i = 0; i < 200; ++i)
        f.push_back(std::make_unique<int>(i));
    for (int i = 0; i < 150; ++i) {  // compacts past 64 consumed
        assert_int_equal(*f.front(), i);
        std::unique_ptr<int> taken = std::move(f.front());
        f.pop_front();
        assert_int_equal(*taken, i);
    }
    assert_int_equal(f.size(), 50);
    assert_int_equal(*f[0], 150);
    assert_int_equal(*f.back(), 199);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_a_deque),
        cmocka_unit_test(test_move_only_elements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
