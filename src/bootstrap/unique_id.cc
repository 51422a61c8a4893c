// SPDX-License-Identifier: Apache-2.0
#include "bootstrap/unique_id.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "bootstrap/host_address.h"
#include "bootstrap/secret.h"
#include "common/error.h"

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

}  // namespace

hvd_unique_id_t make_unique_id(int64_t idle_timeout_ms) {
    bool from_name = false;  // the server listens on every interface anyway
    std::string addr = advertised_address(&from_name);
    // A host name too long for the id that resolves only to loopback here: the job is on
    // this host, as far as this host can tell.
    if (from_name && addr.size() >= kAddrBytes) addr = "127.0.0.1";
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
