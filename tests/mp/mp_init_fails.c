/* SPDX-License-Identifier: Apache-2.0 */
/* mp_init_fails NEEDLE: passes (exit 0) when hvd_init fails with HVD_ERR_INVALID_ARG and an
 * error message that contains NEEDLE; prints the message either way. */
#include <stdio.h>
#include <string.h>

#include "hvd/hvd.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mp_init_fails NEEDLE\n");
        return 64;
    }
    hvd_context_h ctx = NULL;
    hvd_status_t st = hvd_init(NULL, &ctx);
    char msg[2048] = "";
    hvd_last_error(msg, sizeof msg);
    printf("hvd_init: status %d: %s\n", (int)st, msg);
    if (st == HVD_OK) {
        hvd_finalize(ctx);
        return 1;
    }
    return st == HVD_ERR_INVALID_ARG && strstr(msg, argv[1]) ? 0 : 1;
}
