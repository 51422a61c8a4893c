// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/elastic_protocol.h"

#include <cstdlib>
#include <vector>

#include "bootstrap/hex.h"
#include "bootstrap/hmac.h"

namespace hvd::bootstrap::elastic {
namespace {

constexpr const char *kGreeting = "hvd-elastic 1";

std::vector<std::string> split(const std::string &line) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < line.size()) {
        size_t end = line.find(' ', i);
        if (end == std::string::npos) end = line.size();
        if (end > i) words.push_back(line.substr(i, end - i));
        i = end + 1;
    }
    return words;
}

std::string strip_newline(const std::string &line) {
    return !line.empty() && line.back() == '\n' ? line.substr(0, line.size() - 1) : line;
}

bool is_hex(const std::string &text, size_t chars) {
    std::string bytes;
    return text.size() == chars && from_hex(text, &bytes);
}

bool parse_int(const std::string &text, int64_t lo, int64_t hi, int64_t *out) {
    if (text.empty() || text.size() > 18) return false;
    char *end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || (text[0] != '-' && (text[0] < '0' || text[0] > '9'))) return false;
    if (v < lo || v > hi) return false;
    *out = v;
    return true;
}

std::string mac_hex(const std::string &secret, const std::string &message) {
    Sha256Digest d = hmac_sha256(secret, message);
    return to_hex(d.data(), d.size());
}

// Compares a received MAC (hex) with the expected one in constant time.
bool mac_matches(const std::string &secret, const std::string &message, const std::string &hex) {
    std::string got;
    if (hex.size() != 2 * kSha256Bytes || !from_hex(hex, &got)) return false;
    Sha256Digest received{};
    for (size_t i = 0; i < received.size(); ++i)
        received[i] = static_cast<uint8_t>(got[i]);
    return digest_equal(hmac_sha256(secret, message), received);
}

std::string client_message(const std::string &snonce, const std::string &cnonce,
                           const std::string &fields) {
    return "hvd-elastic-client|" + snonce + "|" + cnonce + "|" + fields;
}

std::string server_message(const std::string &cnonce, const std::string &snonce,
                           const std::string &body) {
    return "hvd-elastic-server|" + cnonce + "|" + snonce + "|" + body;
}

// The message of an "error ..." body, or "malformed reply" for anything else not "ok".
bool body_ok(const std::string &body, std::string *err) {
    if (body.compare(0, 3, "ok ") == 0 || body == "ok") return true;
    *err = body.compare(0, 6, "error ") == 0 ? body.substr(6) : "malformed reply";
    return false;
}

}  // namespace

std::string greeting_line(const std::string &server_nonce) {
    return std::string(kGreeting) + " " + server_nonce + "\n";
}

bool parse_greeting(const std::string &line, std::string *server_nonce) {
    std::string text = strip_newline(line);
    const std::string prefix = std::string(kGreeting) + " ";
    if (text.compare(0, prefix.size(), prefix) != 0) return false;
    *server_nonce = text.substr(prefix.size());
    return is_hex(*server_nonce, kNonceHexChars);
}

std::string request_line(const std::string &secret, const std::string &server_nonce,
                         const std::string &client_nonce, const Request &request) {
    std::string fields = std::string(request.kind == RequestKind::kJoin ? "join" : "status") + " " +
                         std::to_string(request.worker_id) + " " + std::to_string(request.round);
    return fields + " " + client_nonce + " " +
           mac_hex(secret, client_message(server_nonce, client_nonce, fields)) + "\n";
}

bool parse_request(const std::string &secret, const std::string &server_nonce,
                   const std::string &line, Request *request, std::string *client_nonce,
                   std::string *err) {
    std::vector<std::string> w = split(strip_newline(line));
    if (w.size() != 5 || !is_hex(w[3], kNonceHexChars)) {
        *err = "malformed request";
        return false;
    }
    std::string fields = w[0] + " " + w[1] + " " + w[2];
    if (!mac_matches(secret, client_message(server_nonce, w[3], fields), w[4])) {
        *err = "authentication failed";
        return false;
    }
    Request r;
    if ((w[0] != "join" && w[0] != "status") || !parse_int(w[1], 0, INT32_MAX, &r.worker_id) ||
        !parse_int(w[2], 0, INT64_MAX / 2, &r.round)) {
        *err = "malformed request";
        return false;
    }
    r.kind = w[0] == "join" ? RequestKind::kJoin : RequestKind::kStatus;
    *request = r;
    *client_nonce = w[3];
    return true;
}

std::string reply_line(const std::string &secret, const std::string &client_nonce,
                       const std::string &server_nonce, const std::string &body) {
    return body + " " + mac_hex(secret, server_message(client_nonce, server_nonce, body)) + "\n";
}

bool parse_reply(const std::string &secret, const std::string &client_nonce,
                 const std::string &server_nonce, const std::string &line, std::string *body,
                 std::string *err) {
    std::string text = strip_newline(line);
    size_t space = text.rfind(' ');
    if (space == std::string::npos ||
        !mac_matches(secret, server_message(client_nonce, server_nonce, text.substr(0, space)),
                     text.substr(space + 1))) {
        *err = "the membership service's reply failed authentication";
        return false;
    }
    *body = text.substr(0, space);
    return true;
}

std::string assignment_body(const Assignment &a) {
    return "ok " + std::to_string(a.round) + " " + std::to_string(a.rank) + " " +
           std::to_string(a.size) + " " + a.rdv_addr + " " + std::to_string(a.rdv_port);
}

std::string status_body(const Status &s) {
    return "ok " + std::to_string(s.round) + " " + (s.pending ? "1" : "0");
}

std::string error_body(const std::string &message) {
    std::string clean = message;
    for (char &c : clean)
        if (c == '\n' || c == '\r') c = ' ';
    return "error " + clean;
}

bool parse_assignment(const std::string &body, Assignment *a, std::string *err) {
    if (!body_ok(body, err)) return false;
    std::vector<std::string> w = split(body);
    int64_t round = 0, rank = 0, size = 0, port = 0;
    if (w.size() != 6 || !parse_int(w[1], 1, INT64_MAX / 2, &round) ||
        !parse_int(w[3], 1, INT32_MAX, &size) || !parse_int(w[2], 0, size - 1, &rank) ||
        !parse_int(w[5], 1, 65535, &port)) {
        *err = "malformed assignment '" + body + "'";
        return false;
    }
    *a = Assignment{round, static_cast<int32_t>(rank), static_cast<int32_t>(size), w[4],
                    static_cast<int32_t>(port)};
    return true;
}

bool parse_status(const std::string &body, Status *s, std::string *err) {
    if (!body_ok(body, err)) return false;
    std::vector<std::string> w = split(body);
    int64_t round = 0, pending = 0;
    if (w.size() != 3 || !parse_int(w[1], 0, INT64_MAX / 2, &round) ||
        !parse_int(w[2], 0, 1, &pending)) {
        *err = "malformed status '" + body + "'";
        return false;
    }
    *s = Status{round, pending == 1};
    return true;
}

}  // namespace hvd::bootstrap::elastic
