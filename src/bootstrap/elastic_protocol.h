// SPDX-License-Identifier: Apache-2.0
// The membership protocol of elastic jobs, between libhvd's hvd_init (the client) and
// hvdrun's membership service (the server). Pure functions over text lines, so that both
// sides (hvdrun links this file, hmac.cc and sha256.cc; none of the rest of libhvd) build and
// check the same bytes.
//
// One request per TCP connection, each message one line ending in '\n':
//   server: "hvd-elastic 1 <server nonce>"
//   client: "<kind> <worker id> <round> <client nonce> <mac>"
//           kind "join": wait for this worker's place in the next membership round;
//           kind "status": the newest round, and whether workers wait to join a later one
//           mac = HMAC-SHA256(secret, "hvd-elastic-client|" snonce "|" cnonce "|" fields)
//   server: "<body> <mac>", mac = HMAC-SHA256(secret, "hvd-elastic-server|" cnonce "|" snonce
//           "|" body); body "ok <fields>" or "error <message>"
// Nonces are 32 hex digits, fresh per connection on each side; the secret never travels. A
// client proves the secret before the server answers; the server's MAC over the client's
// nonce proves it to the client and binds the answer to this request.
#pragma once

#include <cstdint>
#include <string>

namespace hvd::bootstrap::elastic {

constexpr size_t kMaxLineBytes = 1024;
constexpr size_t kNonceHexChars = 32;

enum class RequestKind { kJoin, kStatus };

struct Request {
    RequestKind kind = RequestKind::kJoin;
    int64_t worker_id = 0;
    int64_t round = 0;  // status: the round the worker is in; join: 0
};

// A worker's place in one membership round.
struct Assignment {
    int64_t round = 0;  // 1 for the job's first membership, +1 for each later one
    int32_t rank = 0;
    int32_t size = 0;
    std::string rdv_addr;  // the round's rendezvous: its rank 0's host
    int32_t rdv_port = 0;
};

struct Status {
    int64_t round = 0;     // the newest round formed
    bool pending = false;  // live workers wait outside the newest round (hosts were added)
};

std::string greeting_line(const std::string &server_nonce);
// False unless the line is a greeting of this protocol version with a well-formed nonce.
bool parse_greeting(const std::string &line, std::string *server_nonce);

std::string request_line(const std::string &secret, const std::string &server_nonce,
                         const std::string &client_nonce, const Request &request);
// Checks the MAC (constant time) before using any field. False with *err on a malformed
// line or a MAC that does not verify ("authentication failed").
bool parse_request(const std::string &secret, const std::string &server_nonce,
                   const std::string &line, Request *request, std::string *client_nonce,
                   std::string *err);

std::string reply_line(const std::string &secret, const std::string &client_nonce,
                       const std::string &server_nonce, const std::string &body);
// Checks the MAC, then returns the body ("ok ..." or "error ...") in *body.
bool parse_reply(const std::string &secret, const std::string &client_nonce,
                 const std::string &server_nonce, const std::string &line, std::string *body,
                 std::string *err);

std::string assignment_body(const Assignment &a);
std::string status_body(const Status &s);
std::string error_body(const std::string &message);
// "ok ..." bodies into their structs; an "error ..." body's message, or a malformed body,
// into *err (false).
bool parse_assignment(const std::string &body, Assignment *a, std::string *err);
bool parse_status(const std::string &body, Status *s, std::string *err);

}  // namespace hvd::bootstrap::elastic
