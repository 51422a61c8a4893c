// SPDX-License-Identifier: Apache-2.0
// The rendezvous messages as each side reads them: a received frame checked against what the
// protocol allows at that point and unpacked. No I/O and no connection state, so the server,
// the client and the protocol's fuzz target run the same checks on the same bytes.
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/kv_protocol.h"

namespace hvd::bootstrap {

// ------------------------------------------------------------------ server side

// A HELLO whose proof checked out: who the client says it is.
struct HelloClaim {
    int32_t rank = -1;
    int32_t size = 0;
    std::string client_nonce;
};

// Reads a client's first frame against the challenge this server sent it (`server_nonce`).
// Returns "" and fills *claim when it is a HELLO of this protocol version with a well-formed
// nonce and a proof that MACs `server_nonce` with `secret`; otherwise the reason to REJECT the
// client. Throws hvd::Error(HVD_ERR_TRANSPORT) naming `peer` for a frame that is not a HELLO
// of five fields or whose integers have the wrong width. Whether the claimed rank may join is
// the server's call.
std::string read_hello(const Frame &f, const std::string &secret, const std::string &server_nonce,
                       const std::string &peer, HelloClaim *claim);

// What an authenticated rank asks the server.
struct RankRequest {
    KvMsg type = KvMsg::kBye;  // kPut, kGet or kBye
    uint64_t request_id = 0;   // GET
    std::string key;           // PUT, GET
    std::string value;         // PUT
};

// Reads a frame from an authenticated rank: PUT(key, value), GET(request_id, key) or BYE().
// Throws hvd::Error(HVD_ERR_TRANSPORT) naming `peer` for any other message or field count.
RankRequest read_rank_request(Frame f, const std::string &peer);

// ------------------------------------------------------------------ client side

// Reads the server's CHALLENGE and returns its nonce. Throws hvd::Error(HVD_ERR_TRANSPORT)
// naming `where` and `rank` for another message, another protocol version or a malformed
// nonce.
std::string read_challenge(const Frame &f, const std::string &where, int32_t rank);

// The server's answer to this client's HELLO.
struct HelloAnswer {
    bool retry = false;  // a transient REJECT (kRejectRetryPrefix): reconnect
    std::string reason;  // with retry: the server's words
};

// Reads the answer to HELLO: a WELCOME whose proof MACs both nonces with `secret` returns
// {retry = false}; a transient REJECT returns {retry = true}. Throws
// hvd::Error(HVD_ERR_TRANSPORT) naming `where` and `rank` for a final REJECT (with the
// server's reason), a WELCOME with a wrong proof, or any other frame.
HelloAnswer read_hello_answer(const Frame &f, const std::string &secret,
                              const std::string &client_nonce, const std::string &server_nonce,
                              const std::string &where, int32_t rank);

// What the server tells an authenticated rank: VALUE(request_id, value) or FAILED(rank).
struct ServerNotice {
    KvMsg type = KvMsg::kFailed;  // kValue or kFailed
    uint64_t request_id = 0;      // VALUE
    std::string value;            // VALUE
    int32_t failed_rank = -1;     // FAILED
};

// Throws hvd::Error(HVD_ERR_TRANSPORT) naming `where` for any other message or field count.
ServerNotice read_server_notice(Frame f, const std::string &where);

}  // namespace hvd::bootstrap
