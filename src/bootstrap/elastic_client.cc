// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/elastic_client.h"

#include "bootstrap/hex.h"
#include "bootstrap/secret.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"

namespace hvd::bootstrap::elastic {
namespace {

// Longest sleep between checks of the deadline while a line is awaited.
constexpr int64_t kReadCapMs = 200;

std::string service_name(const ServiceEndpoint &s) {
    return "hvdrun's membership service at " + endpoint_name(s.addr, s.port);
}

// One line from fd, until the deadline; throws naming the service when it closes first.
std::string read_line(int fd, const ServiceEndpoint &service, const Deadline &deadline,
                      const char *waiting_for) {
    std::string buf;
    for (;;) {
        size_t nl = buf.find('\n');
        if (nl != std::string::npos) return buf.substr(0, nl + 1);
        if (buf.size() > kMaxLineBytes)
            throw Error(HVD_ERR_TRANSPORT, service_name(service) + " sent an overlong line");
        if (deadline.expired())
            throw Error(HVD_ERR_TIMED_OUT,
                        strprintf("worker %lld: timed out waiting for %s from %s",
                                  static_cast<long long>(service.worker_id), waiting_for,
                                  service_name(service).c_str()));
        wait_readable(fd, deadline, kReadCapMs);
        if (read_available(fd, &buf, kMaxLineBytes + 1) == ReadResult::kClosed &&
            buf.find('\n') == std::string::npos)
            throw Error(HVD_ERR_TRANSPORT,
                        strprintf("worker %lld: %s closed the connection while this worker "
                                  "waited for %s (hvdrun ended?)",
                                  static_cast<long long>(service.worker_id),
                                  service_name(service).c_str(), waiting_for));
    }
}

// One request and its authenticated reply body.
std::string exchange(const ServiceEndpoint &service, const Request &request,
                     const Deadline &deadline, const char *waiting_for) {
    Fd fd = connect_tcp(service.addr, service.port, deadline);
    std::string server_nonce;
    if (!parse_greeting(read_line(fd.get(), service, deadline, "its greeting"), &server_nonce))
        throw Error(HVD_ERR_TRANSPORT,
                    service_name(service) + " does not speak the membership protocol");
    uint8_t nonce[kNonceHexChars / 2];
    random_bytes(nonce, sizeof nonce);
    const std::string client_nonce = to_hex(nonce, sizeof nonce);
    send_all(fd.get(), request_line(service.secret, server_nonce, client_nonce, request), deadline,
             service_name(service));
    std::string body, err;
    if (!parse_reply(service.secret, client_nonce, server_nonce,
                     read_line(fd.get(), service, deadline, waiting_for), &body, &err))
        throw Error(HVD_ERR_TRANSPORT, service_name(service) + ": " + err);
    return body;
}

[[noreturn]] void refused(const ServiceEndpoint &service, const std::string &why) {
    throw Error(HVD_ERR_ABORTED,
                strprintf("worker %lld: %s: %s", static_cast<long long>(service.worker_id),
                          service_name(service).c_str(), why.c_str()));
}

}  // namespace

Assignment join_next_round(const ServiceEndpoint &service, const Deadline &deadline) {
    Request request{RequestKind::kJoin, service.worker_id, 0};
    std::string body = exchange(service, request, deadline, "its place in the next round");
    Assignment a;
    std::string err;
    if (!parse_assignment(body, &a, &err)) refused(service, err);
    return a;
}

Status query_status(const ServiceEndpoint &service, int64_t round, const Deadline &deadline) {
    Request request{RequestKind::kStatus, service.worker_id, round};
    std::string body = exchange(service, request, deadline, "the membership status");
    Status s;
    std::string err;
    if (!parse_status(body, &s, &err)) refused(service, err);
    return s;
}

}  // namespace hvd::bootstrap::elastic
