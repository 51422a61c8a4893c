// SPDX-License-Identifier: Apache-2.0
// A minimal binary encoding for the engine's control messages: little-endian integers,
// doubles as bits, length-prefixed strings. Readers throw hvd::Error(HVD_ERR_TRANSPORT) on
// a truncated or malformed message instead of reading past its end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"

namespace hvd::util {

class WireWriter {
  public:
    void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
    void i32(int32_t v) { raw(&v, sizeof v); }
    void u32(uint32_t v) { raw(&v, sizeof v); }
    void i64(int64_t v) { raw(&v, sizeof v); }
    void u64(uint64_t v) { raw(&v, sizeof v); }
    void f64(double v) { raw(&v, sizeof v); }
    void str(const std::string &s) {
        u64(s.size());
        out_.append(s);
    }
    // n elements of a plain integer type, after their count.
    template <typename T>
    void array(const T *p, size_t n) {
        u64(n);
        raw(p, n * sizeof(T));
    }
    std::string &bytes() { return out_; }

  private:
    void raw(const void *p, size_t n) { out_.append(static_cast<const char *>(p), n); }
    std::string out_;
};

class WireReader {
  public:
    explicit WireReader(const std::string &in) : in_(in) {}
    uint8_t u8() {
        need(1);
        return static_cast<uint8_t>(in_[pos_++]);
    }
    int32_t i32() { return raw<int32_t>(); }
    uint32_t u32() { return raw<uint32_t>(); }
    int64_t i64() { return raw<int64_t>(); }
    uint64_t u64() { return raw<uint64_t>(); }
    double f64() { return raw<double>(); }
    std::string str() {
        uint64_t n = u64();
        need(n);
        std::string s = in_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    // An array written by WireWriter::array; more than max_count elements is malformed.
    template <typename T>
    std::vector<T> array(uint64_t max_count, const char *what) {
        uint64_t n = u64();
        if (n > max_count)
            throw Error(HVD_ERR_TRANSPORT, strprintf("malformed control message (%s: %llu entries)",
                                                     what, static_cast<unsigned long long>(n)));
        need(n * sizeof(T));
        std::vector<T> v(n);
        if (n) std::memcpy(v.data(), in_.data() + pos_, n * sizeof(T));
        pos_ += n * sizeof(T);
        return v;
    }
    bool at_end() const { return pos_ == in_.size(); }

  private:
    template <typename T>
    T raw() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, in_.data() + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    void need(uint64_t n) {
        if (n > in_.size() - pos_)
            throw Error(HVD_ERR_TRANSPORT, "malformed control message (truncated)");
    }
    const std::string &in_;
    size_t pos_ = 0;
};

}  // namespace hvd::util
