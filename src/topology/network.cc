// SPDX-License-Identifier: Apache-2.0
#include "topology/network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/read.h"

namespace hvd::topology {

namespace {

// The first IPv4 address of interface `name` (want_name) or the interface holding address
// `want_addr`; fills whichever of *name / *addr is asked for.
void find_interface(const std::string &want_name, const std::string &want_addr, std::string *name,
                    std::string *addr) {
    ifaddrs *all = nullptr;
    if (::getifaddrs(&all) != 0) return;
    for (ifaddrs *i = all; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
        char text[INET_ADDRSTRLEN] = {0};
        const auto *in = reinterpret_cast<const sockaddr_in *>(i->ifa_addr);
        if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) continue;
        if ((!want_name.empty() && want_name == i->ifa_name) ||
            (!want_addr.empty() && want_addr == text)) {
            *name = i->ifa_name;
            *addr = text;
            break;
        }
    }
    ::freeifaddrs(all);
}

// The local IPv4 address the kernel routes toward `host` ("" when it cannot tell): a UDP
// socket's connect() sends nothing but picks the source address.
std::string source_address_toward(const std::string &host) {
    addrinfo hints = {};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo *found = nullptr;
    if (host.empty() || ::getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return "";
    std::string result;
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in local = {};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN] = {0};
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr)
        result = text;
    if (fd >= 0) ::close(fd);
    ::freeaddrinfo(found);
    return result;
}

}  // namespace

std::string configured_interfaces() {
    const char *v = config::get_string(config::Setting::kIface);
    if (v == nullptr) v = config::get_string(config::Setting::kGlooIface);
    return v != nullptr ? v : "";
}

NetInterface local_interface(const std::string &devices, const std::string &toward) {
    NetInterface nic;
    std::string first = devices.substr(0, devices.find(','));
    if (!first.empty() && first != "all") {
        nic.name = first.substr(0, first.find(':'));  // "mlx5_0:1": the device, not its port
        find_interface(nic.name, "", &nic.name, &nic.address);
        return nic;
    }
    nic.address = source_address_toward(toward);
    if (!nic.address.empty()) find_interface("", nic.address, &nic.name, &nic.address);
    return nic;
}

std::string describe(const NetInterface &nic) {
    if (!nic.name.empty() && !nic.address.empty()) return nic.address + " on " + nic.name;
    if (!nic.name.empty()) return nic.name;
    if (!nic.address.empty()) return nic.address;
    return "an unknown address";
}

}  // namespace hvd::topology
