// SPDX-License-Identifier: Apache-2.0
// The integrity of the rendezvous frames that follow the handshake (kv_protocol.h). Both ends
// derive one key per direction from the job secret and the connection's two nonces,
//   key = HMAC-SHA256(secret, "hvd-kv frames c2s" or "hvd-kv frames s2c" | nonce_s | nonce_c),
// and every frame's body then ends with kFrameMacBytes of
//   HMAC-SHA256(key, seq u64 | the body before the MAC),
// where seq counts the frames sent in that direction on this connection, from 0, and is not
// sent. A frame altered, dropped, replayed, reordered, reflected back or taken from another
// connection (other nonces, hence other keys) does not verify: the receiver closes the
// connection. The MAC is checked before the frame is parsed, and compared in constant time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "bootstrap/kv_protocol.h"
#include "bootstrap/sha256.h"

namespace hvd::bootstrap {

constexpr size_t kFrameMacBytes = kSha256Bytes;

class FrameMac {
  public:
    enum class Side { kClient, kServer };

    // The keys of one connection as seen from `side`; the nonces are those of its handshake.
    FrameMac(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce,
             Side side);

    // A frame of `type` with `fields`, sealed with the next sending sequence number.
    std::string seal(KvMsg type, std::initializer_list<std::string_view> fields);

    // Takes the next frame from `in` (false when more bytes are needed), verified against
    // the next receiving sequence number. Throws hvd::Error(HVD_ERR_TRANSPORT) saying "frame
    // authentication failed" when its MAC does not verify (nothing of the frame is used), or
    // as FrameDecoder::next does when a verified frame is malformed; the connection must be
    // closed then.
    bool next(FrameDecoder *in, Frame *out);

    uint64_t frames_sent() const { return send_seq_; }
    uint64_t frames_received() const { return recv_seq_; }

  private:
    std::string send_key_, recv_key_;
    uint64_t send_seq_ = 0, recv_seq_ = 0;
};

}  // namespace hvd::bootstrap
