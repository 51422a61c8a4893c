// SPDX-License-Identifier: Apache-2.0
// Deadline: after_ms against the steady clock read around it, and after_ms_coarse (the tick
// clock for long timeouts) within one tick of it; never() and expiry.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <chrono>
#include <initializer_list>
#include <thread>

#include "common/deadline.h"

using hvd::Deadline;
using std::chrono::milliseconds;

namespace {

int64_t ms_between(Deadline::Clock::time_point a, Deadline::Clock::time_point b) {
    return std::chrono::duration_cast<milliseconds>(b - a).count();
}

void test_after_ms_brackets_the_clock(void **) {
    auto before = Deadline::Clock::now();
    Deadline d = Deadline::after_ms(5000);
    auto after = Deadline::Clock::now();
    assert_false(d.infinite());
    assert_true(d.at() >= before + milliseconds(5000));
    assert_true(d.at() <= after + milliseconds(5000));
    assert_false(d.expired());
}

// The tick clock lags the precise one by at most one tick (<= 4 ms at HZ=250; 10 at HZ=100).
void test_coarse_is_within_a_tick(void **) {
    for (int64_t timeout : {1000, 60000, 3600000}) {
        auto before = Deadline::Clock::now();
        Deadline d = Deadline::after_ms_coarse(timeout);
        auto after = Deadline::Clock::now();
        assert_false(d.infinite());
        int64_t early = ms_between(d.at(), before + milliseconds(timeout));
        assert_true(early <= 10);                              // at most a tick early
        assert_true(d.at() <= after + milliseconds(timeout));  // never late
    }
}

void test_coarse_short_and_infinite(void **) {
    auto before = Deadline::Clock::now();
    Deadline d = Deadline::after_ms_coarse(20);  // below a second: the precise clock
    assert_true(d.at() >= before + milliseconds(20));
    assert_false(d.expired());
    std::this_thread::sleep_for(milliseconds(30));
    assert_true(d.expired());
    assert_true(Deadline::after_ms_coarse(-1).infinite());
    assert_true(Deadline::never().infinite());
    assert_int_equal(Deadline::after_ms_coarse(0).remaining_ms(100), 0);
}

// A timeout too long for the clock's time points (an op's timeout_ms from the caller) never
// expires, instead of overflowing into the past.
void test_longest_timeouts_never_expire(void **) {
    for (int64_t ms : {INT64_MAX, Deadline::kNeverMs, int64_t{33495796838039552}}) {
        assert_true(Deadline::after_ms(ms).infinite());
        assert_true(Deadline::after_ms_coarse(ms).infinite());
        assert_false(Deadline::after_ms_coarse(ms).expired());
    }
    Deadline year = Deadline::after_ms_coarse(Deadline::kNeverMs - 1);
    assert_false(year.infinite());
    assert_true(year.at() > Deadline::Clock::now() + std::chrono::hours(24 * 365 * 100));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_after_ms_brackets_the_clock),
        cmocka_unit_test(test_coarse_is_within_a_tick),
        cmocka_unit_test(test_coarse_short_and_infinite),
        cmocka_unit_test(test_longest_timeouts_never_expire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
