// SPDX-License-Identifier: Apache-2.0
// hvd_unique_id_t as a rank reads the bytes the application shipped it: the input fills the
// id (zero-padded or cut to HVD_UNIQUE_ID_BYTES). A parse either fails with hvd::Error or
// yields an address and port a rank can connect to.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "bootstrap/unique_id.h"
#include "common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hvd_unique_id_t id;
    std::memset(&id, 0, sizeof id);
    std::memcpy(id.internal, data, size < sizeof id ? size : sizeof id);
    try {
        hvd::bootstrap::UniqueIdContents c = hvd::bootstrap::parse_unique_id(id);
        if (c.addr.empty() || c.port <= 0 || c.port > 65535) __builtin_trap();
        if (c.addr.find('\0') != std::string::npos) __builtin_trap();
        if (hvd::bootstrap::local_server_for(c) != nullptr) __builtin_trap();
    } catch (const hvd::Error &e) {
        if (e.status() != HVD_ERR_INVALID_ARG) __builtin_trap();
    }
    return 0;
}
