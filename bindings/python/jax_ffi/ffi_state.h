// SPDX-License-Identifier: Apache-2.0
// What hvd.jax's custom calls need from the Python side at run time: the process's libhvd
// context (set at every hvd.init, cleared before hvd.shutdown, so a compiled function keeps
// working across re-init cycles) and the handles of registered process sets by id.
#pragma once

#include <hvd/hvd.h>

#include <cstdint>
#include <string>

namespace hvd_jax {

// The live context, or nullptr between hvd.shutdown and hvd.init.
hvd_context_h context();

// The handle of process set id (0: the global set, nullptr); false if id is not registered
// in the live context.
bool process_set(int64_t id, hvd_process_set_h *ps);

}  // namespace hvd_jax

extern "C" {
// Called by hvd.jax: the new context after hvd.init, NULL before hvd.shutdown (which also
// forgets every process set).
__attribute__((visibility("default"))) void hvd_jax_set_context(void *ctx);
// Called by hvd.jax when a function using process set id is traced.
__attribute__((visibility("default"))) void hvd_jax_set_process_set(int64_t id, void *handle);
}
