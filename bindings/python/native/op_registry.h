// SPDX-License-Identifier: Apache-2.0
// What a binding's native library (hvd.jax's XLA custom calls, hvd.tensorflow's kernels)
// needs from its Python side at run time: the process's libhvd context (set at every
// hvd.init, cleared before hvd.shutdown, so a compiled function keeps working across re-init
// cycles) and the handles of registered process sets by id. Each library that compiles this
// file has its own, which its Python side keeps current through the library's exports.
#pragma once

#include <hvd/hvd.h>

#include <cstdint>

namespace hvd_native {

// The live context, or nullptr between hvd.shutdown and hvd.init.
hvd_context_h live_context();

// The handle of process set id (0: the global set, nullptr); false if id is not registered
// in the live context.
bool process_set_of(int64_t id, hvd_process_set_h *ps);

// A new context (nullptr before hvd.shutdown); every process set is forgotten.
void set_live_context(void *ctx);

// Registers process set id's handle in the live context.
void set_process_set(int64_t id, void *handle);

}  // namespace hvd_native
