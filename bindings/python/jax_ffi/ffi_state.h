// SPDX-License-Identifier: Apache-2.0
// hvd.jax's hold on its custom calls' run-time state (native/op_registry.h): the live
// context and the registered process sets, kept current by hvd/jax/_ffi.py.
#pragma once

#include <cstdint>

extern "C" {
// Called by hvd.jax: the new context after hvd.init, NULL before hvd.shutdown (which also
// forgets every process set).
__attribute__((visibility("default"))) void hvd_jax_set_context(void *ctx);
// Called by hvd.jax when a function using process set id is traced.
__attribute__((visibility("default"))) void hvd_jax_set_process_set(int64_t id, void *handle);
}
