// SPDX-License-Identifier: Apache-2.0
// The member numbering of recursive doubling over a group of any size (the standard scheme):
// of the first 2 * extra members (extra = n - the largest power of two <= n), each even one
// folds its data into the odd one after it and sits out the doubling; the others form the
// power-of-two core, numbered so that a lower core number always stands for lower member
// indices. In round d = 1, 2, 4, ... core member c exchanges with core member c ^ d.
#pragma once

#include <cstdint>

namespace hvd::collectives {

struct DoublingFold {
    explicit DoublingFold(int32_t n) : core(1) {
        while (core * 2 <= n)
            core *= 2;
        extra = n - core;
    }
    // An even member of the fold: hands its data to index + 1, gets the result back.
    bool folds_out(int32_t index) const { return index < 2 * extra && index % 2 == 0; }
    // An odd member of the fold: takes index - 1's data first, returns the result last.
    bool takes_fold(int32_t index) const { return index < 2 * extra && index % 2 == 1; }
    // The core number of a member that does not fold out.
    int32_t core_number(int32_t index) const {
        return index < 2 * extra ? index / 2 : index - extra;
    }
    // The member index of a core number.
    int32_t member(int32_t core_no) const {
        return core_no < extra ? 2 * core_no + 1 : core_no + extra;
    }
    int32_t core;   // the largest power of two <= n
    int32_t extra;  // n - core
};

}  // namespace hvd::collectives
