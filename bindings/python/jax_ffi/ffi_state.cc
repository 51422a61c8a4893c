// SPDX-License-Identifier: Apache-2.0
#include "ffi_state.h"

#include "op_registry.h"

extern "C" void hvd_jax_set_context(void *ctx) {
    hvd_native::set_live_context(ctx);
}

extern "C" void hvd_jax_set_process_set(int64_t id, void *handle) {
    hvd_native::set_process_set(id, handle);
}
