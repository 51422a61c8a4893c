/* SPDX-License-Identifier: Apache-2.0 */
/* A GPU module of another ABI version: it refuses every version but its own. */
#include <stddef.h>
#include <stdint.h>

__attribute__((visibility("default"))) const void *hvd_gpu_module_get(uint32_t abi_version,
                                                                      uint32_t *module_abi) {
    (void)abi_version;
    if (module_abi != NULL) *module_abi = 99;
    return NULL;
}
