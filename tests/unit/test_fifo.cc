// SPDX-License-Identifier: Apache-2.0
// util::Fifo against std::deque: random pushes and pops (with long stretches that never
// empty, so the front is compacted away), indexing from the front, popping several, clear,
// and a move-only element type; a push after pops reuses a popped element's storage, and
// clear() destroys every element.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "util/fifo.h"

using hvd::util::Fifo;

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
        } else if (ref.size() > 3 && rng() % 4 == 0) {
            f.pop_front(3);
            for (int i = 0; i < 3; ++i)
                ref.pop_front();
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

// Popped elements stay in their slots: once the queue has drained, pushes assign into them,
// so a copy of a string no longer than the one there before needs no new allocation (as
// the engine copies responses out of the response cache).
void test_popped_storage_is_reused(void **) {
    Fifo<std::string> f;
    std::vector<const char *> storage;
    for (int i = 0; i < 10; ++i) {
        f.push_back(std::string(100, static_cast<char>('a' + i)));
        storage.push_back(f.back().data());
    }
    f.pop_front(10);
    assert_true(f.empty());
    const std::string copied(60, 'z');
    for (int i = 0; i < 10; ++i) {
        f.push_back(copied);
        assert_ptr_equal(f.back().data(), storage[static_cast<size_t>(i)]);
        assert_true(f.back() == std::string(60, 'z'));
    }
    assert_int_equal(f.size(), 10);
}

void test_clear_destroys(void **) {
    Fifo<std::shared_ptr<int>> f;
    auto a = std::make_shared<int>(1), b = std::make_shared<int>(2);
    f.push_back(a);
    f.push_back(b);
    f.pop_front();  // a lingers in its slot until reused or cleared
    assert_int_equal(f.size(), 1);
    assert_true(f.front() == b);
    f.clear();
    assert_int_equal(a.use_count(), 1);
    assert_int_equal(b.use_count(), 1);
    assert_true(f.empty());
    f.push_back(a);  // usable after clear
    assert_true(f.front() == a);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_a_deque),
        cmocka_unit_test(test_move_only_elements),
        cmocka_unit_test(test_popped_storage_is_reused),
        cmocka_unit_test(test_clear_destroys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
