// SPDX-License-Identifier: Apache-2.0
#include "negotiation/wire_protocol.h"

#include <cstdio>

#include "common/error.h"
#include "hvd/hvd.h"

namespace hvd::negotiation {

namespace {

constexpr const char *kSuffixFormat = "libhvd %s protocol %d";

struct Entry {
    std::string host;
    std::string version;  // empty: no suffix, a libhvd from before this check
    int32_t protocol = 1;
};

Entry parse(const std::string &entry) {
    Entry e;
    size_t newline = entry.find('\n');
    e.host = entry.substr(0, newline);
    if (newline == std::string::npos) return e;
    char version[64] = "";
    int protocol = 0;
    if (std::sscanf(entry.c_str() + newline + 1, "libhvd %63s protocol %d", version, &protocol) ==
        2) {
        e.version = version;
        e.protocol = protocol;
    } else {
        e.version = "unknown";
        e.protocol = -1;
    }
    return e;
}

}  // namespace

std::string host_entry(const std::string &host) {
    return host + "\n" + strprintf(kSuffixFormat, HVD_VERSION_STRING, kWireProtocol);
}

std::vector<std::string> hosts_of_same_protocol(const std::vector<std::string> &entries,
                                                int32_t rank) {
    std::vector<std::string> hosts;
    std::string odd;
    for (size_t r = 0; r < entries.size(); ++r) {
        Entry e = parse(entries[r]);
        if (e.protocol != kWireProtocol) {
            std::string build = e.version.empty() ? std::string("an older libhvd (protocol 1)")
                                                  : strprintf("libhvd %s (protocol %d)",
                                                              e.version.c_str(), e.protocol);
            odd += strprintf("%s rank %zu on %s runs %s", odd.empty() ? "" : ";", r, e.host.c_str(),
                             build.c_str());
        }
        hosts.push_back(std::move(e.host));
    }
    if (!odd.empty())
        throw Error(HVD_ERR_MISMATCH,
                    strprintf("rank %d runs libhvd %s (protocol %d), but%s: every rank of a job "
                              "must run a libhvd that speaks the same protocol",
                              rank, HVD_VERSION_STRING, kWireProtocol, odd.c_str()));
    return hosts;
}

}  // namespace hvd::negotiation
