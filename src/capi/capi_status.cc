// SPDX-License-Identifier: Apache-2.0
// Status strings, last error, version and features.
#include "capi/guard.h"
#include "common/error.h"
#include "gpu/gpu_library.h"
#include "hvd/hvd.h"
#include "topology/local_topology.h"

extern "C" {

HVD_API const char *hvd_strerror(hvd_status_t status) noexcept {
    return hvd::status_message(status);
}

HVD_API const char *hvd_status_name(hvd_status_t status) noexcept {
    return hvd::status_name(status);
}

HVD_API size_t hvd_last_error(char *buf, size_t len) noexcept {
    return hvd::capi::copy_out(hvd::last_error(), buf, len);
}

HVD_API uint32_t hvd_version(void) noexcept {
    return HVD_VERSION_CODE;
}

HVD_API const char *hvd_version_string(void) noexcept {
    return HVD_VERSION_STRING;
}

HVD_API uint64_t hvd_features(void) noexcept {
    uint64_t features = HVD_FEATURE_UCX;
    try {
        if (hvd::topology::local_machine() != nullptr) features |= HVD_FEATURE_HWLOC;
    } catch (...) {
    }
    try {
        features |= hvd::gpu::gpu_features();  // loads the GPU module on the first call
    } catch (...) {
    }
    return features;
}

}  // extern "C"
