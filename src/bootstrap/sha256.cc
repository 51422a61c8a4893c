// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/sha256.h"

#include <cstring>

#include "bootstrap/hex.h"

namespace hvd::bootstrap {

namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of
// the first 64 primes.
constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// Section 5.3.3: the first 32 bits of the fractional parts of the square roots of the first
// 8 primes.
constexpr uint32_t kInitialState[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}
inline uint32_t ch(uint32_t x, uint32_t y, uint32_t z) {
    return (x & y) ^ (~x & z);
}
inline uint32_t maj(uint32_t x, uint32_t y, uint32_t z) {
    return (x & y) ^ (x & z) ^ (y & z);
}
inline uint32_t big_sigma0(uint32_t x) {
    return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22);
}
inline uint32_t big_sigma1(uint32_t x) {
    return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25);
}
inline uint32_t small_sigma0(uint32_t x) {
    return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3);
}
inline uint32_t small_sigma1(uint32_t x) {
    return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10);
}

inline uint32_t load_be32(const uint8_t *p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

inline void store_be32(uint32_t x, uint8_t *p) {
    p[0] = static_cast<uint8_t>(x >> 24);
    p[1] = static_cast<uint8_t>(x >> 16);
    p[2] = static_cast<uint8_t>(x >> 8);
    p[3] = static_cast<uint8_t>(x);
}

}  // namespace

Sha256::Sha256() {
    std::memcpy(state_.data(), kInitialState, sizeof kInitialState);
}

// Section 6.2.2: message schedule, then 64 rounds over the working variables a..h.
void Sha256::compress(const uint8_t *block) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; ++t)
        w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];

    uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
    for (int t = 0; t < 64; ++t) {
        uint32_t t1 = h + big_sigma1(e) + ch(e, f, g) + kRoundConstants[t] + w[t];
        uint32_t t2 = big_sigma0(a) + maj(a, b, c);
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
}

void Sha256::update(const void *data, size_t len) {
    const auto *p = static_cast<const uint8_t *>(data);
    total_bytes_ += len;
    while (len > 0) {
        if (block_len_ == 0 && len >= kSha256BlockBytes) {  // whole block: no copy
            compress(p);
            p += kSha256BlockBytes;
            len -= kSha256BlockBytes;
            continue;
        }
        size_t take = kSha256BlockBytes - block_len_;
        if (take > len) take = len;
        std::memcpy(block_.data() + block_len_, p, take);
        block_len_ += take;
        p += take;
        len -= take;
        if (block_len_ == kSha256BlockBytes) {
            compress(block_.data());
            block_len_ = 0;
        }
    }
}

// Section 5.1.1: append the bit 1, zeros up to 56 mod 64 bytes, then the length in bits as a
// big-endian 64-bit number.
Sha256Digest Sha256::finish() {
    uint64_t bit_len = total_bytes_ * 8;
    block_[block_len_++] = 0x80;
    if (block_len_ > kSha256BlockBytes - 8) {
        std::memset(block_.data() + block_len_, 0, kSha256BlockBytes - block_len_);
        compress(block_.data());
        block_len_ = 0;
    }
    std::memset(block_.data() + block_len_, 0, kSha256BlockBytes - 8 - block_len_);
    store_be32(static_cast<uint32_t>(bit_len >> 32), block_.data() + 56);
    store_be32(static_cast<uint32_t>(bit_len), block_.data() + 60);
    compress(block_.data());

    Sha256Digest digest;
    for (int i = 0; i < 8; ++i)
        store_be32(state_[i], digest.data() + 4 * i);
    return digest;
}

Sha256Digest sha256(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.finish();
}

std::string sha256_hex(std::string_view data) {
    Sha256Digest d = sha256(data);
    return to_hex(d.data(), d.size());
}

}  // namespace hvd::bootstrap
