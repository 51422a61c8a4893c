// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/frame_mac.h"

#include <cstring>

#include "bootstrap/hmac.h"
#include "common/error.h"

namespace hvd::bootstrap {

namespace {

std::string direction_key(std::string_view secret, const char *label, std::string_view server_nonce,
                          std::string_view client_nonce) {
    HmacSha256 mac(secret);
    mac.update(label);
    mac.update(server_nonce);
    mac.update(client_nonce);
    Sha256Digest key = mac.finish();
    return std::string(reinterpret_cast<const char *>(key.data()), key.size());
}

Sha256Digest frame_mac(const std::string &key, uint64_t seq, std::string_view data) {
    HmacSha256 mac(key);
    mac.update(encode_u64(seq));
    mac.update(data);
    return mac.finish();
}

}  // namespace

FrameMac::FrameMac(std::string_view secret, std::string_view server_nonce,
                   std::string_view client_nonce, Side side) {
    std::string to_server = direction_key(secret, "hvd-kv frames c2s", server_nonce, client_nonce);
    std::string to_client = direction_key(secret, "hvd-kv frames s2c", server_nonce, client_nonce);
    send_key_ = side == Side::kClient ? to_server : to_client;
    recv_key_ = side == Side::kClient ? to_client : to_server;
}

std::string FrameMac::seal(KvMsg type, std::initializer_list<std::string_view> fields) {
    std::string frame = encode_frame(type, fields);
    Sha256Digest mac = frame_mac(send_key_, send_seq_++, std::string_view(frame).substr(4));
    frame.append(reinterpret_cast<const char *>(mac.data()), mac.size());
    // The length prefix now counts the MAC too.
    frame.replace(0, 4, encode_u32(static_cast<uint32_t>(frame.size() - 4)));
    return frame;
}

bool FrameMac::next(FrameDecoder *in, Frame *out) {
    std::string_view body;
    if (!in->next_body(&body)) return false;
    uint64_t seq = recv_seq_++;
    bool ok = body.size() > kFrameMacBytes;
    if (ok) {
        Sha256Digest got;
        std::memcpy(got.data(), body.data() + body.size() - kFrameMacBytes, got.size());
        body.remove_suffix(kFrameMacBytes);
        ok = digest_equal(got, frame_mac(recv_key_, seq, body));
    }
    if (!ok)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("frame authentication failed: frame %llu of this connection does "
                              "not carry its MAC (altered, replayed, reordered, or taken from "
                              "another connection)",
                              static_cast<unsigned long long>(seq)));
    *out = parse_frame_body(body);
    return true;
}

}  // namespace hvd::bootstrap
