/* SPDX-License-Identifier: Apache-2.0 */
/* Where no CUDA device is usable (no GPU, no driver, or no GPU module): every rank gets
 * HVD_ERR_UNSUPPORTED at once for a CUDA tensor, with a message saying why; the GPU-only
 * fields are refused on host tensors; and the job goes on (a host allreduce after it is right
 * on every rank). Where a device is usable it has nothing to check and says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mp/mp_check.h"

static void expect(hvd_status_t got, hvd_status_t want, const char *what, const char *part) {
    if (got != want)
        mp_die("%s: got %s, want %s", what, hvd_status_name(got), hvd_status_name(want));
    char message[1024];
    hvd_last_error(message, sizeof message);
    if (strstr(message, part) == NULL)
        mp_die("%s: the message lacks '%s': %s", what, part, message);
}

int main(void) {
    mp_init();
    if (hvd_features() & HVD_FEATURE_CUDA) {
        printf("rank %d: a CUDA device is usable; tests/gpu/gpu_collectives checks it\n", mp_rank);
        mp_finalize();
        return 0;
    }
    float host[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    hvd_request_h req = NULL;
    hvd_op_params_t p = mp_reduce_params("cuda.refused", HVD_OP_SUM);

    hvd_tensor_t cuda = mp_tensor((void *)(uintptr_t)0x100000, HVD_DTYPE_FLOAT32, 1, shape);
    cuda.device_type = HVD_DEVICE_CUDA;
    expect(hvd_allreduce_enqueue(mp_ctx, &cuda, &cuda, &p, &req), HVD_ERR_UNSUPPORTED,
           "allreduce of a CUDA tensor", "CUDA device 0");
    const char *why = getenv("HVD_GPU_MODULE") != NULL ? "no libhvd GPU module" : "";
    expect(hvd_allgather_enqueue(mp_ctx, &cuda, &p, &req), HVD_ERR_UNSUPPORTED,
           "allgather of a CUDA tensor", why);

    hvd_tensor_t t = mp_tensor(host, HVD_DTYPE_FLOAT32, 1, shape);
    t.field_mask = HVD_TENSOR_FIELD_READY_EVENT;
    t.ready_event = (void *)(uintptr_t)0x1;
    expect(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_INVALID_ARG,
           "a ready event on a host tensor", "ready events are for CUDA tensors");

    t = mp_tensor(host, HVD_DTYPE_FLOAT32, 1, shape);
    p.field_mask |= HVD_OP_FIELD_STREAM;
    p.stream = (void *)(uintptr_t)0x1;
    expect(hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req), HVD_ERR_INVALID_ARG,
           "a stream for a host tensor", "only for ops on CUDA tensors");

    p = mp_reduce_params("host.after", HVD_OP_SUM);
    if (hvd_allreduce_enqueue(mp_ctx, &t, &t, &p, &req) != HVD_OK) mp_die("host allreduce");
    if (mp_wait(req) != HVD_OK) mp_die("host allreduce failed");
    hvd_request_release(req);
    for (int i = 0; i < 4; ++i)
        if (host[i] != (float)((i + 1) * mp_size))
            mp_die("host allreduce: element %d is %g, want %d", i, host[i], (i + 1) * mp_size);
    printf("rank %d: CUDA tensors refused cleanly\n", mp_rank);
    mp_finalize();
    return 0;
}
