// SPDX-License-Identifier: Apache-2.0
// hvd.tensorflow's ops (HvdAllreduce, HvdGroupedAllreduce, HvdAllgather, HvdGroupedAllgather,
// HvdBroadcast, HvdAlltoall, HvdReducescatter, HvdGroupedReducescatter, HvdJoin, HvdBarrier)
// and their kernels.
#pragma once

namespace hvd_tf {

// The dtype attribute of the single-tensor ops: every dtype libhvd reduces or moves.
extern const char *const kTypeAttr;

// Registers the op definitions / the CPU kernels; false if TensorFlow refused one.
bool register_ops();
bool register_kernels();

}  // namespace hvd_tf
