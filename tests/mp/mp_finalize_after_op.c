/* SPDX-License-Identifier: Apache-2.0 */
/* Finalize right after a large op, repeatedly: a rank that finished its part of a
 * rendezvous-protocol transfer must keep answering its peers' protocol messages while it
 * waits in finalize, or the peer's send never completes (found as a 60 s hang of 1 in ~30
 * 4-rank demo runs). Each cycle: init, three 16 MiB allreduces checked, finalize. A hang
 * shows as a request that does not complete within the test's limits. */
#include <stdio.h>
#include <stdlib.h>

#include "mp_check.h"

enum { kCycles = 3, kOps = 3 };

int main(void) {
    const size_t count = (16u << 20) / sizeof(float);
    float *buf = malloc(count * sizeof(float));
    if (buf == NULL) return 1;
    for (int cycle = 0; cycle < kCycles; ++cycle) {
        mp_init();
        int64_t shape[1] = {(int64_t)count};
        for (int op = 0; op < kOps; ++op) {
            for (size_t i = 0; i < count; ++i)
                buf[i] = (float)(mp_rank + 1);
            hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, shape);
            hvd_op_params_t p = mp_params(NULL);
            hvd_request_h req;
            if (hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req) != HVD_OK)
                mp_die("cycle %d: enqueue failed", cycle);
            if (mp_wait(req) != HVD_OK) mp_die("cycle %d: allreduce failed", cycle);
            hvd_request_release(req);
            float expect = (float)(mp_size * (mp_size + 1) / 2);
            if (buf[0] != expect || buf[count - 1] != expect)
                mp_die("cycle %d: got %g, expected %g", cycle, buf[0], expect);
        }
        mp_finalize();
    }
    free(buf);
    printf("rank %d: %d init/allreduce/finalize cycles ok\n", mp_rank, kCycles);
    return 0;
}
