// SPDX-License-Identifier: Apache-2.0
// SHA-256 against FIPS 180-2 appendix B and padding-boundary digests (computed with Python's
// hashlib), HMAC-SHA256 against RFC 4231, and the random secret helper.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <algorithm>
#include <string>

#include "bootstrap/hex.h"
#include "bootstrap/hmac.h"
#include "bootstrap/secret.h"
#include "bootstrap/sha256.h"

using namespace hvd::bootstrap;

namespace {

std::string hex(const Sha256Digest &d) {
    return to_hex(d.data(), d.size());
}

void expect_sha(const std::string &msg, const char *want) {
    assert_string_equal(sha256_hex(msg).c_str(), want);
}

void test_fips_vectors(void **) {
    expect_sha("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_sha("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    expect_sha(
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
        "nopqrlmnopqrsmnopqrstnopqrstu",
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    expect_sha(std::string(1000000, 'a'),
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::string pattern(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>((i * 7 + 3) & 0xff);
    return s;
}

// Lengths around the 56-byte padding boundary and the 64-byte block.
void test_padding_boundaries(void **) {
    struct {
        size_t len;
        const char *digest;
    } cases[] = {
        {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
        {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
        {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
        {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
        {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
        {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
        {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
    };
    for (const auto &c : cases)
        expect_sha(pattern(c.len), c.digest);
}

// Feeding the message in uneven pieces gives the one-shot digest.
void test_incremental_equals_one_shot(void **) {
    std::string msg = pattern(1000);
    for (size_t piece : {1, 3, 63, 64, 65, 500}) {
        Sha256 h;
        for (size_t off = 0; off < msg.size(); off += piece)
            h.update(msg.data() + off, std::min(piece, msg.size() - off));
        assert_string_equal(hex(h.finish()).c_str(), sha256_hex(msg).c_str());
    }
}

std::string bytes_1_to(int n) {
    std::string s;
    for (int b = 1; b <= n; ++b)
        s.push_back(static_cast<char>(b));
    return s;
}

void test_hmac_rfc4231(void **) {
    struct {
        std::string key, data;
        const char *mac;
    } cases[] = {
        {std::string(20, '\x0b'), "Hi There",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", "what do ya want for nothing?",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {std::string(20, '\xaa'), std::string(50, '\xdd'),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {bytes_1_to(25), std::string(50, '\xcd'),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {std::string(131, '\xaa'),
         "This is a test using a larger than block-size key and a larger than block-size data. "
         "The key needs to be hashed before being used by the HMAC algorithm.",
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    for (const auto &c : cases)
        assert_string_equal(hex(hmac_sha256(c.key, c.data)).c_str(), c.mac);
    // Test case 5 checks a MAC truncated to 128 bits.
    std::string truncated = hex(hmac_sha256(std::string(20, '\x0c'), "Test With Truncation"));
    assert_string_equal(truncated.substr(0, 32).c_str(), "a3b6167473100ee06e0c796c2955552b");
}

void test_digest_equal(void **) {
    Sha256Digest a = sha256("x"), b = sha256("x"), c = sha256("y");
    assert_true(digest_equal(a, b));
    assert_false(digest_equal(a, c));
    b[31] ^= 1;
    assert_false(digest_equal(a, b));
}

void test_random_secret(void **) {
    std::string a = random_secret(), b = random_secret();
    assert_int_equal(a.size(), 64);
    assert_true(a.find_first_not_of("0123456789abcdef") == std::string::npos);
    assert_true(a != b);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_padding_boundaries),
        cmocka_unit_test(test_incremental_equals_one_shot),
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_digest_equal),
        cmocka_unit_test(test_random_secret),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
