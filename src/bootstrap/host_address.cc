// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/host_address.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/loopback.h"
#include "common/env.h"
#include "config/read.h"
#include "topology/network.h"

namespace hvd::bootstrap {

namespace {

// The first non-loopback IPv4 address `name` resolves to, or "" (*any: whether it resolves
// at all).
std::string resolved_address(const std::string &name, bool *any) {
    addrinfo hints = {};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    std::string resolved;
    *any = false;
    if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return "";
    *any = found != nullptr;
    for (addrinfo *a = found; a != nullptr && resolved.empty(); a = a->ai_next) {
        char text[NI_MAXHOST] = {0};
        if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0,
                          NI_NUMERICHOST) == 0 &&
            !is_loopback_address(text))
            resolved = text;
    }
    ::freeaddrinfo(found);
    return resolved;
}

}  // namespace

std::string advertised_address(bool *listen_everywhere) {
    *listen_everywhere = false;
    if (const char *a = config::get_string(config::Setting::kRendezvousAddr)) return a;
    const char *ucx = env_get("UCX_NET_DEVICES");
    const std::string devices = ucx != nullptr ? ucx : topology::configured_interfaces();
    if (!devices.empty() && devices != "all") {
        topology::NetInterface nic = topology::local_interface(devices, "");
        if (!nic.address.empty()) return nic.address;
    }
    char text[256] = {0};
    const std::string name =
        ::gethostname(text, sizeof text - 1) == 0 && text[0] != '\0' ? text : "localhost";
    bool resolves = false;
    std::string resolved = resolved_address(name, &resolves);
    if (!resolved.empty()) return resolved;
    *listen_everywhere = true;
    return resolves ? name : "127.0.0.1";
}

}  // namespace hvd::bootstrap
