// SPDX-License-Identifier: Apache-2.0
#include "engine/peer_reachability.h"

#include <sstream>

#include "bootstrap/hex.h"
#include "common/error.h"

namespace hvd::engine {

namespace {

// Peers named in one message; the rest are counted.
constexpr size_t kMaxNamedPeers = 4;

std::string or_dash(const std::string &s) {
    return s.empty() ? "-" : s;
}
std::string from_dash(const std::string &s) {
    return s == "-" ? "" : s;
}

std::string who(int32_t rank, const std::vector<std::string> &hosts,
                const std::vector<TransportEntry> &entries) {
    return strprintf("rank %d (host %s, %s)", rank, hosts.at(rank).c_str(),
                     topology::describe(entries.at(rank).nic).c_str());
}

}  // namespace

std::string format_transport_entry(const TransportEntry &entry) {
    return bootstrap::to_hex(entry.address.data(), entry.address.size()) + " " +
           or_dash(entry.nic.name) + " " + or_dash(entry.nic.address);
}

bool parse_transport_entry(const std::string &text, TransportEntry *entry) {
    std::istringstream in(text);
    std::string hex, name, address, extra;
    if (!(in >> hex >> name >> address) || (in >> extra)) return false;
    if (!bootstrap::from_hex(hex, &entry->address)) return false;
    entry->nic.name = from_dash(name);
    entry->nic.address = from_dash(address);
    return true;
}

void throw_unreachable(int32_t rank, const std::vector<std::string> &hosts,
                       const std::vector<TransportEntry> &entries,
                       const std::vector<transport::Unreachable> &bad, int64_t timeout_ms) {
    std::string msg = who(rank, hosts, entries) + " cannot reach ";
    for (size_t i = 0; i < bad.size() && i < kMaxNamedPeers; ++i) {
        std::string why = bad[i].reported ? "the transport reports it unreachable"
                                          : strprintf(
                                                "no answer within hvd_init's %.1f s "
                                                "(HVD_START_TIMEOUT)",
                                                static_cast<double>(timeout_ms) / 1000.0);
        if (!bad[i].reason.empty()) why += " (" + bad[i].reason + ")";
        msg += (i == 0 ? "" : "; ") + who(bad[i].peer, hosts, entries) + ": " + why;
    }
    if (bad.size() > kMaxNamedPeers)
        msg += strprintf(" (and %zu more)", bad.size() - kMaxNamedPeers);
    throw Error(HVD_ERR_TRANSPORT,
                msg +
                    " (check the network between these hosts; HVD_IFACE or UCX_NET_DEVICES "
                    "choose the interfaces)");
}

void require_reachable(transport::Transport &t, const std::vector<std::string> &hosts,
                       const std::vector<TransportEntry> &entries, int64_t timeout_ms,
                       const Deadline &deadline) {
    std::vector<transport::Unreachable> bad = transport::unreachable_peers(t, deadline);
    if (!bad.empty()) throw_unreachable(t.rank(), hosts, entries, bad, timeout_ms);
}

}  // namespace hvd::engine
