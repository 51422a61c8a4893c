// Reading HVD_* settings. Every HVD_X may also be given as HOROVOD_X (Horovod's name);
// HVD_X wins when both are set.
#pragma once

#include <cstdint>
#include <string>

namespace hvd {

// Value of HVD_<key> or HOROVOD_<key>; nullptr when neither is set. key has no prefix.
const char *env_setting(const char *key);

// Parsed forms; a malformed value logs a warning once and yields the default.
int64_t env_setting_int(const char *key, int64_t dflt);
double env_setting_double(const char *key, double dflt);
bool env_setting_bool(const char *key, bool dflt);

// Plain getenv that treats "" as unset.
const char *env_get(const char *name);

}  // namespace hvd
