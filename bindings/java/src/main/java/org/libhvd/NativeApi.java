// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.DoubleByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * Every exported function of include/hvd/hvd.h as JNA maps it. Structs travel as pointers
 * to memory laid out by {@link Layout}; size_t is a Java long (64-bit Linux).
 */
interface NativeApi extends Library {
    String hvd_strerror(int status);

    String hvd_status_name(int status);

    long hvd_last_error(byte[] buf, long len);

    int hvd_version();

    String hvd_version_string();

    long hvd_features();

    int hvd_get_unique_id(byte[] idP);

    int hvd_init_versioned(int abiVersion, int versionCode, Pointer params, PointerByReference ctxP);

    int hvd_finalize(Pointer ctx);

    int hvd_abort(Pointer ctx, int reason);

    int hvd_context_error(Pointer ctx);

    int hvd_rank(Pointer ctx, Pointer ps, IntByReference rankP);

    int hvd_size(Pointer ctx, Pointer ps, IntByReference sizeP);

    int hvd_local_rank(Pointer ctx, IntByReference rankP);

    int hvd_local_size(Pointer ctx, IntByReference sizeP);

    int hvd_cross_rank(Pointer ctx, IntByReference rankP);

    int hvd_cross_size(Pointer ctx, IntByReference sizeP);

    int hvd_elastic_membership(Pointer ctx, LongByReference roundP, IntByReference pendingP);

    int hvd_process_set_create(Pointer ctx, int[] ranks, int n, PointerByReference psP);

    int hvd_process_set_destroy(Pointer ctx, Pointer ps);

    int hvd_process_set_included(Pointer ctx, Pointer ps, IntByReference includedP);

    int hvd_allreduce_enqueue(Pointer ctx, Pointer in, Pointer out, Pointer params, PointerByReference reqP);

    int hvd_allgather_enqueue(Pointer ctx, Pointer in, Pointer params, PointerByReference reqP);

    int hvd_allgather_into_enqueue(Pointer ctx, Pointer in, Pointer out, Pointer params, PointerByReference reqP);

    int hvd_broadcast_enqueue(Pointer ctx, Pointer in, Pointer out, Pointer params, PointerByReference reqP);

    int hvd_alltoall_enqueue(Pointer ctx, Pointer in, Pointer params, PointerByReference reqP);

    int hvd_reducescatter_enqueue(Pointer ctx, Pointer in, Pointer params, PointerByReference reqP);

    int hvd_barrier_enqueue(Pointer ctx, Pointer params, PointerByReference reqP);

    int hvd_join_enqueue(Pointer ctx, Pointer params, PointerByReference reqP);

    int hvd_grouped_allreduce_enqueue(
            Pointer ctx, Pointer ins, Pointer outs, int n, Pointer params, PointerByReference reqP);

    int hvd_grouped_allgather_enqueue(Pointer ctx, Pointer ins, int n, Pointer params, PointerByReference reqP);

    int hvd_grouped_reducescatter_enqueue(
            Pointer ctx, Pointer ins, int n, Pointer params, PointerByReference reqP);

    int hvd_mem_alloc(long bytes, PointerByReference ptrP);

    int hvd_mem_free(Pointer ptr);

    int hvd_timeline_start(Pointer ctx, String path, int markCycles);

    int hvd_timeline_stop(Pointer ctx);

    int hvd_config_set(Pointer ctx, int key, double value);

    int hvd_config_get(Pointer ctx, int key, DoubleByReference valueP);

    int hvd_request_test(Pointer req);

    int hvd_request_wait(Pointer req, long timeoutMs);

    int hvd_request_output(Pointer req, int i, Pointer outP);

    int hvd_request_received_splits(Pointer req, int[] splits, int n);

    int hvd_request_value(Pointer req, LongByReference valueP);

    long hvd_request_message(Pointer req, byte[] buf, long len);

    int hvd_request_release(Pointer req);
}
