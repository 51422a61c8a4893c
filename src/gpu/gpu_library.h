// SPDX-License-Identifier: Apache-2.0
// The process's GPU module (gpu_module_api.h), opened on first use: libhvd.so has no link-time
// dependency on CUDA or NCCL, and a process that never passes a CUDA tensor never loads them.
#pragma once

#include <string>

#include "gpu/gpu_module_api.h"
#include "hvd/hvd.h"

namespace hvd::gpu {

// An opened module: its table and what it found.
struct GpuLibrary {
    const hvd_gpu_module_t *api = nullptr;
    hvd_gpu_info_t info{};
    std::string path;  // the module file

    bool cuda_usable() const { return info.device_count > 0; }
    bool nccl_usable() const { return cuda_usable() && info.nccl_version > 0; }

    // Calls a table function f(args..., &err); a failure throws hvd::Error(HVD_ERR_DEVICE)
    // "<what>: <CUDA or NCCL message>".
    template <class F, class... A>
    void call(const char *what, F f, A... args) const {
        hvd_gpu_err_t err;
        err.text[0] = '\0';
        if (f(args..., &err) != 0) throw_failure(what, err);
    }
    [[noreturn]] static void throw_failure(const char *what, const hvd_gpu_err_t &err);
};

// Opens the module file at `path` (a name without a slash goes through the system's loader),
// checks that it speaks this libhvd's module ABI and opens it (nccl_library: see
// hvd_gpu_module_t.open). False with *problem naming the file and what failed (not found,
// no entry point, another ABI version, the module's own failure). Does not cache; for tests
// and for the process-wide loader below.
bool open_gpu_module(const std::string &path, const std::string &nccl_library, GpuLibrary *out,
                     std::string *problem);

// The process's module, opened once (thread-safe): HVD_GPU_MODULE, else libhvd-nccl.so.1 in
// the directory of the library holding this code, else libhvd-nccl.so.1 through the system's
// loader; NCCL from HVD_NCCL_LIBRARY. Null when none could be opened, with *problem listing
// every place tried (the same text on every call).
const GpuLibrary *gpu_library(std::string *problem);

// Why a CUDA tensor cannot be used here ("" when it can): no module, or the module found no
// device. Loads the module if needed.
std::string cuda_unusable_reason();

// HVD_FEATURE_CUDA and HVD_FEATURE_NCCL from what the module found; 0 when it is absent.
uint64_t gpu_features();

}  // namespace hvd::gpu
