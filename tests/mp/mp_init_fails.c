/* SPDX-License-Identifier: Apache-2.0 */
/* mp_init_fails NEEDLE [STATUS]: passes (exit 0) when hvd_init fails with STATUS (its name,
 * HVD_ERR_INVALID_ARG by default) and an error message that contains NEEDLE; prints the
 * message either way. */
#include <stdio.h>
#include <string.h>

#include "hvd/hvd.h"

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: mp_init_fails NEEDLE [STATUS]\n");
        return 64;
    }
    hvd_context_h ctx = NULL;
    hvd_status_t st = hvd_init(NULL, &ctx);
    char msg[2048] = "";
    hvd_last_error(msg, sizeof msg);
    printf("hvd_init: status %d (%s): %s\n", (int)st, hvd_status_name(st), msg);
    if (st == HVD_OK) {
        hvd_finalize(ctx);
        return 1;
    }
    const char *want = argc == 3 ? argv[2] : "HVD_ERR_INVALID_ARG";
    return strcmp(hvd_status_name(st), want) == 0 && strstr(msg, argv[1]) ? 0 : 1;
}
