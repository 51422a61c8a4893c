// SPDX-License-Identifier: Apache-2.0
// The bootstrap's text helpers: hexadecimal encoding of transport addresses and secrets (both
// directions, every byte value, malformed input) and the loopback test shared by libhvd's
// rendezvous server and hvdrun.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <string>

#include "bootstrap/hex.h"
#include "bootstrap/loopback.h"

using namespace hvd::bootstrap;

namespace {

void test_hex_known_bytes(void **) {
    const unsigned char bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    assert_string_equal(to_hex(bytes, sizeof bytes).c_str(), "00017f80abff");
    std::string back;
    assert_true(from_hex("00017f80abff", &back));
    assert_int_equal(back.size(), sizeof bytes);
    for (size_t i = 0; i < sizeof bytes; ++i)
        assert_int_equal(static_cast<unsigned char>(back[i]), bytes[i]);
}

void test_hex_round_trip_every_byte(void **) {
    std::string all;
    for (int b = 0; b < 256; ++b)
        all.push_back(static_cast<char>(b));
    std::string text = to_hex(all.data(), all.size());
    assert_int_equal(text.size(), 512);
    std::string back;
    assert_true(from_hex(text, &back));
    assert_true(back == all);
    assert_true(from_hex("", &back));
    assert_int_equal(back.size(), 0);
}

void test_hex_rejects_malformed(void **) {
    std::string out;
    assert_false(from_hex("abc", &out));                  // odd length
    assert_false(from_hex("0g", &out));                   // not a digit
    assert_false(from_hex("AB", &out));                   // to_hex writes lower case only
    assert_false(from_hex("00 1", &out));                 // a space
    assert_false(from_hex(std::string("0\0", 2), &out));  // an embedded NUL
}

void test_loopback_addresses(void **) {
    assert_true(is_loopback_address("localhost"));
    assert_true(is_loopback_address("127.0.0.1"));
    assert_true(is_loopback_address("127.1.2.3"));
    assert_true(is_loopback_address("::1"));
    assert_false(is_loopback_address(""));
    assert_false(is_loopback_address("10.0.0.1"));
    assert_false(is_loopback_address("1.127.0.0"));
    assert_false(is_loopback_address("localhost.example.com"));
    assert_false(is_loopback_address("node17"));
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_known_bytes),
        cmocka_unit_test(test_hex_round_trip_every_byte),
        cmocka_unit_test(test_hex_rejects_malformed),
        cmocka_unit_test(test_loopback_addresses),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
