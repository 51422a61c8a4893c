// SPDX-License-Identifier: Apache-2.0
// Reads a fuzz input as a sequence of typed values: integers little-endian, strings length
// prefixed. Past the end every read yields zeros, so any input is a valid sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace fuzz {

class Input {
  public:
    Input(const uint8_t *data, size_t size) : p_(data), n_(size) {}

    template <typename T>
    T take() {
        T v{};
        size_t k = sizeof v < n_ - pos_ ? sizeof v : n_ - pos_;
        if (k) std::memcpy(&v, p_ + pos_, k);
        pos_ += k;
        return v;
    }
    // A string of at most max_len bytes (its length comes from the input).
    std::string str(size_t max_len) {
        size_t len = take<uint16_t>() % (max_len + 1);
        return bytes(len);
    }
    std::string bytes(size_t len) {
        if (len > n_ - pos_) len = n_ - pos_;
        std::string s(reinterpret_cast<const char *>(p_ + pos_), len);
        pos_ += len;
        return s;
    }
    std::string rest() { return bytes(n_ - pos_); }
    bool empty() const { return pos_ == n_; }

  private:
    const uint8_t *p_;
    size_t n_;
    size_t pos_ = 0;
};

}  // namespace fuzz
