// SPDX-License-Identifier: Apache-2.0
// Shared tensor memory: hvd_mem_alloc / hvd_mem_free over shm/shared_memory.h.
#include "capi/guard.h"
#include "common/error.h"
#include "hvd/hvd.h"
#include "shm/shared_memory.h"

extern "C" {

HVD_API hvd_status_t hvd_mem_alloc(size_t bytes, void **ptr_p) noexcept {
    return hvd::capi::guarded("hvd_mem_alloc", [&]() -> hvd_status_t {
        if (ptr_p == nullptr)
            return hvd::capi::fail(HVD_ERR_INVALID_ARG, "hvd_mem_alloc: ptr_p is NULL");
        *ptr_p = hvd::shm::shared_alloc(bytes);
        return HVD_OK;
    });
}

HVD_API hvd_status_t hvd_mem_free(void *ptr) noexcept {
    return hvd::capi::guarded("hvd_mem_free", [&]() -> hvd_status_t {
        if (ptr == nullptr) return HVD_OK;
        if (hvd::shm::shared_free(ptr) != HVD_OK)
            return hvd::capi::fail(HVD_ERR_INVALID_ARG,
                                   hvd::strprintf("hvd_mem_free: %p is not memory from "
                                                  "hvd_mem_alloc (or was freed already)",
                                                  ptr));
        return HVD_OK;
    });
}

}  // extern "C"
