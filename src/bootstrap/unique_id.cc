// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/unique_id.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "bootstrap/secret.h"
#include "common/error.h"
#include "config/read.h"
#include "topology/host_topology.h"

namespace hvd::bootstrap {

namespace {

// Layout: magic[4] | port u16 LE | 2 reserved | addr[48] NUL-terminated | secret[64] hex | 8
constexpr char kMagic[4] = {'H', 'V', 'D', '1'};
constexpr size_t kPortOffset = 4;
constexpr size_t kAddrOffset = 8;
constexpr size_t kAddrBytes = 48;
constexpr size_t kSecretOffset = kAddrOffset + kAddrBytes;
constexpr size_t kSecretBytes = 64;
static_assert(kSecretOffset + kSecretBytes <= HVD_UNIQUE_ID_BYTES, "unique id layout");

struct ServerEntry {
    int port;
    std::string secret;
    std::shared_ptr<bootstrap::KvServer> server;
};

std::mutex g_mu;
std::vector<ServerEntry> g_servers;  // servers started by hvd_get_unique_id in this process

// The address other hosts should use: HVD_RENDEZVOUS_ADDR, else this host's name resolved to
// IPv4, else loopback (a single-host job).
std::string advertised_address() {
    if (const char *a = config::get_string(config::Setting::kRendezvousAddr)) return a;
    std::string host = topology::this_host_name();
    struct addrinfo hints {};
    hints.ai_family = AF_INET;
    struct addrinfo *res = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) == 0 && res != nullptr) {
        char buf[INET_ADDRSTRLEN] = {0};
        auto *sin = reinterpret_cast<struct sockaddr_in *>(res->ai_addr);
        inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
        freeaddrinfo(res);
        return buf;
    }
    return "127.0.0.1";
}

}  // namespace

hvd_unique_id_t make_unique_id(int64_t idle_timeout_ms) {
    std::string addr = advertised_address();
    if (addr.size() >= kAddrBytes)
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("rendezvous address '%s' is longer than %zu bytes", addr.c_str(),
                              kAddrBytes - 1));
    std::string secret = bootstrap::random_secret();
    auto server = std::make_shared<bootstrap::KvServer>("", 0, secret, 0, idle_timeout_ms);

    hvd_unique_id_t id;
    std::memset(&id, 0, sizeof id);
    std::memcpy(id.internal, kMagic, sizeof kMagic);
    uint16_t port = static_cast<uint16_t>(server->port());
    id.internal[kPortOffset] = static_cast<char>(port & 0xff);
    id.internal[kPortOffset + 1] = static_cast<char>(port >> 8);
    std::memcpy(id.internal + kAddrOffset, addr.data(), addr.size());
    std::memcpy(id.internal + kSecretOffset, secret.data(), kSecretBytes);

    std::lock_guard<std::mutex> lock(g_mu);
    // Forget servers whose job is over.
    std::vector<ServerEntry> live;
    for (auto &e : g_servers)
        if (!e.server->finished()) live.push_back(std::move(e));
    g_servers.swap(live);
    g_servers.push_back(ServerEntry{server->port(), secret, server});
    return id;
}

UniqueIdContents parse_unique_id(const hvd_unique_id_t &id) {
    if (std::memcmp(id.internal, kMagic, sizeof kMagic) != 0)
        throw Error(HVD_ERR_INVALID_ARG,
                    "the unique id was not made by hvd_get_unique_id (bad magic)");
    UniqueIdContents c;
    c.port = static_cast<uint8_t>(id.internal[kPortOffset]) |
             (static_cast<uint8_t>(id.internal[kPortOffset + 1]) << 8);
    const char *addr = id.internal + kAddrOffset;
    c.addr.assign(addr, strnlen(addr, kAddrBytes));
    c.secret.assign(id.internal + kSecretOffset, kSecretBytes);
    if (c.port == 0 || c.addr.empty() || c.addr.size() == kAddrBytes)
        throw Error(HVD_ERR_INVALID_ARG, "the unique id is corrupt (no address or port)");
    return c;
}

std::shared_ptr<bootstrap::KvServer> local_server_for(const UniqueIdContents &id) {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto &e : g_servers)
        if (e.port == id.port && e.secret == id.secret) return e.server;
    return nullptr;
}

}  // namespace hvd::bootstrap
