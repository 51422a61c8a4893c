// SPDX-License-Identifier: Apache-2.0
// Plain environment access. Settings (HVD_* / HOROVOD_*) are read through config/read.h,
// which names their rows in config/settings.h.
#pragma once

namespace hvd {

// getenv that treats "" as unset. Thread-safe while no thread changes the environment.
const char *env_get(const char *name);

}  // namespace hvd
