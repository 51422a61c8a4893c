#include "common/env.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hvd {

const char *env_get(const char *name) {
    const char *v = std::getenv(name);
    return (v && *v) ? v : nullptr;
}

const char *env_setting(const char *key) {
    std::string hvd_name = std::string("HVD_") + key;
    if (const char *v = env_get(hvd_name.c_str())) return v;
    std::string horovod_name = std::string("HOROVOD_") + key;
    return env_get(horovod_name.c_str());
}

int64_t env_setting_int(const char *key, int64_t dflt) {
    const char *v = env_setting(key);
    if (!v) return dflt;
    errno = 0;
    char *end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0') {
        std::fprintf(stderr, "[hvd] warning: ignoring HVD_%s=%s (not an integer)\n", key, v);
        return dflt;
    }
    return static_cast<int64_t>(x);
}

double env_setting_double(const char *key, double dflt) {
    const char *v = env_setting(key);
    if (!v) return dflt;
    errno = 0;
    char *end = nullptr;
    double x = std::strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0') {
        std::fprintf(stderr, "[hvd] warning: ignoring HVD_%s=%s (not a number)\n", key, v);
        return dflt;
    }
    return x;
}

bool env_setting_bool(const char *key, bool dflt) {
    const char *v = env_setting(key);
    if (!v) return dflt;
    if (!std::strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on"))
        return true;
    if (!std::strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
        !strcasecmp(v, "off"))
        return false;
    std::fprintf(stderr, "[hvd] warning: ignoring HVD_%s=%s (not a boolean)\n", key, v);
    return dflt;
}

}  // namespace hvd
