// SPDX-License-Identifier: Apache-2.0
#include "transport/ucx/ucx_tls.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace hvd::transport {

namespace {

constexpr const char kTlsKey[] = "UCX_TLS=";

// The names of a comma-separated list, each without a ":aux"-style suffix.
std::set<std::string> names_of(const std::string &list) {
    std::set<std::string> names;
    size_t at = 0;
    while (at <= list.size()) {
        size_t end = list.find(',', at);
        if (end == std::string::npos) end = list.size();
        std::string name = list.substr(at, end - at);
        name = name.substr(0, name.find(':'));
        if (!name.empty()) names.insert(name);
        at = end + 1;
    }
    return names;
}

bool names_any(const std::set<std::string> &names, std::initializer_list<const char *> of) {
    for (const char *n : of)
        if (names.count(n) != 0) return true;
    return false;
}

}  // namespace

std::string configured_tls(const ucp_config_t *config) {
    char *text = nullptr;
    size_t size = 0;
    FILE *out = ::open_memstream(&text, &size);
    if (out == nullptr) return "";
    ucp_config_print(config, out, nullptr, UCS_CONFIG_PRINT_CONFIG);
    std::fclose(out);
    std::string tls;
    for (const char *line = text; line != nullptr && *line != '\0';) {
        const char *end = std::strchr(line, '\n');
        size_t len = end != nullptr ? static_cast<size_t>(end - line) : std::strlen(line);
        if (len >= sizeof(kTlsKey) - 1 && std::strncmp(line, kTlsKey, sizeof(kTlsKey) - 1) == 0) {
            tls.assign(line + sizeof(kTlsKey) - 1, len - (sizeof(kTlsKey) - 1));
            break;
        }
        line = end != nullptr ? end + 1 : nullptr;
    }
    std::free(text);
    return tls;
}

bool tls_allow_shared_memory(const std::string &tls) {
    if (!tls.empty() && tls[0] == '^') {
        std::set<std::string> excluded = names_of(tls.substr(1));
        if (names_any(excluded, {"sm", "shm", "mm"})) return false;
        return !(excluded.count("posix") != 0 && excluded.count("sysv") != 0);
    }
    return names_any(names_of(tls), {"all", "sm", "shm", "mm", "posix", "sysv", "xpmem"});
}

}  // namespace hvd::transport
