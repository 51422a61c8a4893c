// SPDX-License-Identifier: Apache-2.0
#include "network_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace hvdrun {
namespace {

bool is_interface_name(const std::string &name) {
    if (name.empty() || name.size() >= IFNAMSIZ) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.' || c == ':';
        if (!ok) return false;
    }
    return true;
}

}  // namespace

bool parse_interface_list(const std::string &text, std::vector<std::string> *out,
                          std::string *err) {
    std::vector<std::string> names;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
        if (!is_interface_name(name)) {
            *err = "invalid --network-interfaces entry '" + name +
                   "' (expected interface names such as eth0,ib0)";
            return false;
        }
        names.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    *out = names;
    return true;
}

std::string missing_local_interface(const std::vector<std::string> &names) {
    for (const std::string &name : names) {
        if (if_nametoindex(name.c_str()) == 0) return name;
    }
    return "";
}

std::string interface_ipv4_address(const std::string &name) {
    struct ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return "";
    std::string found;
    for (struct ifaddrs *a = list; a != nullptr && found.empty(); a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || name != a->ifa_name) {
            continue;
        }
        char buf[INET_ADDRSTRLEN];
        const auto *in = reinterpret_cast<const struct sockaddr_in *>(a->ifa_addr);
        if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf) != nullptr) found = buf;
    }
    freeifaddrs(list);
    return found;
}

std::string interface_check_command(const std::vector<std::string> &names) {
    if (names.empty()) return "";
    std::string list;
    for (const std::string &name : names)
        list += " " + name;  // names need no quoting
    return "for i in" + list +
           "; do [ -e \"/sys/class/net/$i\" ] || { echo \"hvdrun: host $(hostname) has no "
           "network interface $i (--network-interfaces)\" >&2; exit 2; }; done";
}

}  // namespace hvdrun
