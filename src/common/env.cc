// SPDX-License-Identifier: Apache-2.0
#include "common/env.h"

#include <cstdlib>

namespace hvd {

const char *env_get(const char *name) {
    const char *v = std::getenv(name);
    return (v && *v) ? v : nullptr;
}

}  // namespace hvd
