// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/kv_protocol.h"

#include "common/error.h"

namespace hvd::bootstrap {

namespace {

uint32_t load_le32(const char *p) {
    const auto *b = reinterpret_cast<const unsigned char *>(p);
    return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}

void append_le32(std::string *out, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void check_known_type(char type_byte) {
    auto t = static_cast<uint8_t>(type_byte);
    if (t < static_cast<uint8_t>(KvMsg::kChallenge) || t > static_cast<uint8_t>(KvMsg::kBye))
        throw Error(HVD_ERR_TRANSPORT, strprintf("rendezvous protocol: unknown message type %u",
                                                 static_cast<unsigned>(t)));
}

}  // namespace

const char *kv_msg_name(KvMsg type) {
    switch (type) {
        case KvMsg::kChallenge:
            return "CHALLENGE";
        case KvMsg::kHello:
            return "HELLO";
        case KvMsg::kWelcome:
            return "WELCOME";
        case KvMsg::kReject:
            return "REJECT";
        case KvMsg::kPut:
            return "PUT";
        case KvMsg::kGet:
            return "GET";
        case KvMsg::kValue:
            return "VALUE";
        case KvMsg::kFailed:
            return "FAILED";
        case KvMsg::kBye:
            return "BYE";
    }
    return "UNKNOWN";
}

std::string encode_u32(uint32_t v) {
    std::string s;
    append_le32(&s, v);
    return s;
}

std::string encode_u64(uint64_t v) {
    std::string s;
    append_le32(&s, static_cast<uint32_t>(v));
    append_le32(&s, static_cast<uint32_t>(v >> 32));
    return s;
}

uint32_t decode_u32(const std::string &field) {
    if (field.size() != 4)
        throw Error(HVD_ERR_TRANSPORT, "rendezvous protocol: 32-bit field of wrong width");
    return load_le32(field.data());
}

uint64_t decode_u64(const std::string &field) {
    if (field.size() != 8)
        throw Error(HVD_ERR_TRANSPORT, "rendezvous protocol: 64-bit field of wrong width");
    return uint64_t{load_le32(field.data())} | (uint64_t{load_le32(field.data() + 4)} << 32);
}

std::string encode_frame(KvMsg type, std::initializer_list<std::string_view> fields) {
    size_t body = 1;
    for (std::string_view f : fields)
        body += 4 + f.size();
    std::string out;
    out.reserve(4 + body);
    append_le32(&out, static_cast<uint32_t>(body));
    out.push_back(static_cast<char>(type));
    for (std::string_view f : fields) {
        append_le32(&out, static_cast<uint32_t>(f.size()));
        out.append(f.data(), f.size());
    }
    return out;
}

Frame parse_frame_body(std::string_view body) {
    if (body.empty()) throw Error(HVD_ERR_TRANSPORT, "rendezvous protocol: empty frame");
    check_known_type(body[0]);
    Frame f;
    f.type = static_cast<KvMsg>(static_cast<uint8_t>(body[0]));
    size_t off = 1;
    while (off < body.size()) {
        if (body.size() - off < 4 || f.fields.size() == kMaxFrameFields)
            throw Error(HVD_ERR_TRANSPORT, "rendezvous protocol: malformed frame fields");
        uint32_t flen = load_le32(body.data() + off);
        off += 4;
        if (flen > body.size() - off)
            throw Error(HVD_ERR_TRANSPORT, "rendezvous protocol: field runs past its frame");
        f.fields.emplace_back(body.data() + off, flen);
        off += flen;
    }
    return f;
}

std::string *FrameDecoder::buffer() {
    // Compact once the consumed prefix dominates, keeping appends amortised O(1).
    if (pos_ == buf_.size()) {
        buf_.clear();
        pos_ = 0;
    } else if (pos_ > buf_.size() / 2) {
        buf_.erase(0, pos_);
        pos_ = 0;
    }
    return &buf_;
}

bool FrameDecoder::next(Frame *out) {
    // An unknown type is refused as soon as its byte arrives, not once its whole frame has.
    if (buf_.size() - pos_ >= 5) check_known_type(buf_[pos_ + 4]);
    std::string_view body;
    if (!next_body(&body)) return false;
    *out = parse_frame_body(body);
    return true;
}

bool FrameDecoder::next_body(std::string_view *body) {
    size_t avail = buf_.size() - pos_;
    if (avail < 4) return false;
    uint32_t body_len = load_le32(buf_.data() + pos_);
    if (body_len == 0 || body_len > max_frame_bytes_)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous protocol: frame of %u bytes (limit %zu)", body_len,
                              max_frame_bytes_));
    if (avail - 4 < body_len) return false;
    *body = std::string_view(buf_.data() + pos_ + 4, body_len);
    pos_ += 4 + body_len;
    return true;
}

void expect_frame(const Frame &f, KvMsg type, size_t num_fields, const std::string &from) {
    if (f.type != type || f.fields.size() != num_fields)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("%s: expected %s with %zu fields, got %s with %zu", from.c_str(),
                              kv_msg_name(type), num_fields, kv_msg_name(f.type), f.fields.size()));
}

}  // namespace hvd::bootstrap
