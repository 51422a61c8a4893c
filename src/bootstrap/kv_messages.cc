// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/kv_messages.h"

#include <utility>

#include "bootstrap/kv_auth.h"
#include "common/error.h"

namespace hvd::bootstrap {

std::string read_hello(const Frame &f, const std::string &secret, const std::string &server_nonce,
                       const std::string &peer, HelloClaim *claim) {
    expect_frame(f, KvMsg::kHello, 5, peer);
    uint32_t version = decode_u32(f.fields[0]);
    auto rank = static_cast<int32_t>(decode_u32(f.fields[1]));
    auto size = static_cast<int32_t>(decode_u32(f.fields[2]));
    const std::string &client_nonce = f.fields[3];
    if (version != kKvProtocolVersion)
        return strprintf("protocol version %u, the server speaks %u", version, kKvProtocolVersion);
    if (client_nonce.size() != kNonceBytes) return "malformed HELLO nonce";
    if (!proof_matches(f.fields[4], client_proof(secret, server_nonce, rank, size)))
        return "authentication failed (wrong job secret?)";
    claim->rank = rank;
    claim->size = size;
    claim->client_nonce = client_nonce;
    return "";
}

RankRequest read_rank_request(Frame f, const std::string &peer) {
    RankRequest req;
    req.type = f.type;
    switch (f.type) {
        case KvMsg::kPut:
            expect_frame(f, KvMsg::kPut, 2, peer);
            req.key = std::move(f.fields[0]);
            req.value = std::move(f.fields[1]);
            return req;
        case KvMsg::kGet:
            expect_frame(f, KvMsg::kGet, 2, peer);
            req.request_id = decode_u64(f.fields[0]);
            req.key = std::move(f.fields[1]);
            return req;
        case KvMsg::kBye:
            expect_frame(f, KvMsg::kBye, 0, peer);
            return req;
        default:
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("%s: unexpected %s message", peer.c_str(), kv_msg_name(f.type)));
    }
}

std::string read_challenge(const Frame &f, const std::string &where, int32_t rank) {
    expect_frame(f, KvMsg::kChallenge, 2, "rendezvous at " + where);
    uint32_t version = decode_u32(f.fields[0]);
    if (version != kKvProtocolVersion)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous at %s speaks protocol %u, rank %d speaks %u",
                              where.c_str(), version, rank, kKvProtocolVersion));
    if (f.fields[1].size() != kNonceBytes)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous at %s sent a malformed challenge", where.c_str()));
    return f.fields[1];
}

HelloAnswer read_hello_answer(const Frame &f, const std::string &secret,
                              const std::string &client_nonce, const std::string &server_nonce,
                              const std::string &where, int32_t rank) {
    if (f.type == KvMsg::kReject && f.fields.size() == 1) {
        const std::string &reason = f.fields[0];
        if (reason.rfind(kRejectRetryPrefix, 0) == 0) return HelloAnswer{true, reason};
        throw Error(HVD_ERR_TRANSPORT, strprintf("rendezvous at %s rejected rank %d: %s",
                                                 where.c_str(), rank, reason.c_str()));
    }
    expect_frame(f, KvMsg::kWelcome, 1, "rendezvous at " + where);
    if (!proof_matches(f.fields[0], server_proof(secret, client_nonce, server_nonce)))
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rendezvous at %s could not prove it knows the job secret "
                              "(different secret, or not this job's server)",
                              where.c_str()));
    return HelloAnswer{};
}

ServerNotice read_server_notice(Frame f, const std::string &where) {
    ServerNotice n;
    if (f.type == KvMsg::kValue) {
        expect_frame(f, KvMsg::kValue, 2, "rendezvous at " + where);
        n.type = KvMsg::kValue;
        n.request_id = decode_u64(f.fields[0]);
        n.value = std::move(f.fields[1]);
        return n;
    }
    expect_frame(f, KvMsg::kFailed, 1, "rendezvous at " + where);
    n.failed_rank = static_cast<int32_t>(decode_u32(f.fields[0]));
    return n;
}

}  // namespace hvd::bootstrap
