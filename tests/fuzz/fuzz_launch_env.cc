// SPDX-License-Identifier: Apache-2.0
// Launcher detection over an environment made of the input: lines "NAME=VALUE" (a line
// without '=' is a name set to ""; a later line of the same name wins). Detection either fails
// with HVD_ERR_INVALID_ARG and a message, or describes a launch a rank can act on.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "bootstrap/launch_env.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::string text(reinterpret_cast<const char *>(data), size);
    std::map<std::string, std::string> vars;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        size_t eq = line.find('=');
        // Environment strings end at a NUL: the value a process sees stops there too.
        std::string name = line.substr(0, eq);
        std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
        vars[name.substr(0, name.find('\0'))] = value.substr(0, value.find('\0'));
        start = end + 1;
    }
    hvd::bootstrap::EnvLookup env = [&vars](const char *name) -> const char * {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
    hvd::bootstrap::LaunchInfo info;
    std::string err;
    hvd_status_t st = hvd::bootstrap::detect_launch(env, &info, &err);
    if (st != HVD_OK) {
        if (st != HVD_ERR_INVALID_ARG || err.empty()) __builtin_trap();
        return 0;
    }
    if (info.launcher.empty() || info.size < 1 || info.rank < 0 || info.rank >= info.size)
        __builtin_trap();
    if (info.local_size < 0 || info.local_size > info.size) __builtin_trap();
    if (info.local_rank < -1 || (info.local_size > 0 && info.local_rank >= info.local_size))
        __builtin_trap();
    if (!info.rdv_addr.empty() && (info.rdv_port < 1 || info.rdv_port > 65535)) __builtin_trap();
    // Without an address: a job id names the file, or Hydra's PMI-1 server hands it over.
    if (info.rdv_addr.empty() && (info.rdv_port != 0 || (info.job_id.empty() && info.pmi_fd < 0)))
        __builtin_trap();
    // Through PMIx or PMI-1 rank 0 may make the secret (none given); else exactly one source
    // of it.
    const bool via_launcher = info.rdv_via_pmix || info.pmi_fd >= 0;
    if (via_launcher && !info.rdv_addr.empty()) __builtin_trap();
    if (info.rdv_via_pmix && info.pmi_fd >= 0) __builtin_trap();
    if (info.pmi_fd >= 0 &&
        (info.launcher != "pmi" || info.secret_from_file || info.secret_derived))
        __builtin_trap();
    if (info.secret_from_file && !info.secret.empty()) __builtin_trap();
    if (!via_launcher && info.secret.empty() && !info.secret_from_file) __builtin_trap();
    return 0;
}
