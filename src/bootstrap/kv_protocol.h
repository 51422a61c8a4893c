// SPDX-License-Identifier: Apache-2.0
// The rendezvous wire format. Every message is one frame:
//   u32 body_len | u8 type | fields...,   each field = u32 len | bytes   (integers little-endian)
// Fields are binary-safe, so keys, values, nonces and MACs travel unchanged.
//
// Handshake:  S->C CHALLENGE(version, nonce_s)
//             C->S HELLO(version, rank u32, size u32, nonce_c, client_proof)
//             S->C WELCOME(server_proof) followed by FAILED(r) for ranks already dead,
//                  or REJECT(reason) and the server closes.
// Then:       C->S PUT(key, value) | GET(request_id u64, key) | BYE
//             S->C VALUE(request_id, value)   (when the key exists; GETs wait on the server)
//                  FAILED(rank)               (a rank's connection closed without BYE)
// Every frame after WELCOME, both ways (the FAILEDs that follow WELCOME too), ends with a MAC
// of the connection and of its place in the stream (frame_mac.h).
// After BYE the server closes the connection; the client waits for that EOF, which proves that
// everything it sent before was processed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace hvd::bootstrap {

// Changes with the wire format (frame MACs are part of it), so ends of different versions
// fail at the handshake, each naming both versions.
constexpr uint32_t kKvProtocolVersion = 2;
constexpr size_t kNonceBytes = 32;
// Limits that keep a garbage or hostile peer from making either side allocate without bound.
constexpr size_t kMaxHandshakeFrameBytes = 4096;
constexpr size_t kMaxFrameBytes = size_t{64} << 20;
constexpr size_t kMaxFrameFields = 8;
// A REJECT whose reason starts with this is transient: a rank that left this server's session
// of the job (hvd_finalize) and joins again (the next hvd_init) reached the old server before
// it shut down; the client reconnects until the new session's server answers.
constexpr const char *kRejectRetryPrefix = "retry: ";

enum class KvMsg : uint8_t {
    kChallenge = 1,
    kHello = 2,
    kWelcome = 3,
    kReject = 4,
    kPut = 5,
    kGet = 6,
    kValue = 7,
    kFailed = 8,
    kBye = 9,
};

const char *kv_msg_name(KvMsg type);

struct Frame {
    KvMsg type = KvMsg::kBye;
    std::vector<std::string> fields;
};

// Integers as fixed-width little-endian fields.
std::string encode_u32(uint32_t v);
std::string encode_u64(uint64_t v);
// Throw hvd::Error(HVD_ERR_TRANSPORT) when the field has the wrong width.
uint32_t decode_u32(const std::string &field);
uint64_t decode_u64(const std::string &field);

std::string encode_frame(KvMsg type, std::initializer_list<std::string_view> fields);

// Reassembles frames from a byte stream that arrives in arbitrary pieces.
class FrameDecoder {
  public:
    explicit FrameDecoder(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}
    void set_max_frame_bytes(size_t max) { max_frame_bytes_ = max; }

    // The raw buffer to append received bytes to. Drops the bytes of frames already taken
    // first, which ends the views next_body returned.
    std::string *buffer();
    // Takes the next complete frame. Returns false when more bytes are needed. Throws
    // hvd::Error(HVD_ERR_TRANSPORT) on a malformed frame (too long, bad field lengths, unknown
    // type); the stream is unusable afterwards.
    bool next(Frame *out);
    // Takes the next complete frame's body (from its type byte on), unparsed: for a frame that
    // is authenticated before it is parsed. The view lasts until the next buffer() call.
    // Returns false when more bytes are needed; throws as next() does on a bad length.
    bool next_body(std::string_view *body);

  private:
    std::string buf_;
    size_t pos_ = 0;  // start of the first unconsumed byte
    size_t max_frame_bytes_;
};

// Parses a frame body as next_body returns it; throws as next() does when it is malformed.
Frame parse_frame_body(std::string_view body);

// Checks the type and field count of a received frame; throws hvd::Error(HVD_ERR_TRANSPORT)
// naming `from` otherwise.
void expect_frame(const Frame &f, KvMsg type, size_t num_fields, const std::string &from);

}  // namespace hvd::bootstrap
