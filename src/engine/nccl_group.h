// SPDX-License-Identifier: Apache-2.0
// NCCL calls queued between ncclGroupStart and end(): one launch for all of them. A group left
// by an exception is ended without a check (its communicator is aborted then). Engine thread
// only.
#pragma once

#include "gpu/gpu_library.h"

namespace hvd::engine {

class NcclGroup {
  public:
    // Throws hvd::Error(HVD_ERR_DEVICE) where NCCL refuses.
    explicit NcclGroup(const gpu::GpuLibrary *lib) : lib_(lib) {
        lib_->call("ncclGroupStart", lib_->api->nccl_group_start);
    }
    NcclGroup(const NcclGroup &) = delete;
    NcclGroup &operator=(const NcclGroup &) = delete;
    // Throws hvd::Error(HVD_ERR_DEVICE) with NCCL's message.
    void end() {
        ended_ = true;
        lib_->call("ncclGroupEnd", lib_->api->nccl_group_end);
    }
    ~NcclGroup() {
        if (ended_) return;
        hvd_gpu_err_t err;
        lib_->api->nccl_group_end(&err);
    }

  private:
    const gpu::GpuLibrary *lib_;
    bool ended_ = false;
};

}  // namespace hvd::engine
