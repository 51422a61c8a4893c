/* SPDX-License-Identifier: Apache-2.0 */
/* Libraries that look like NCCL to the GPU module's loader but cannot be used: built with
 * FAKE_NCCL_MISSING (no ncclCommInitRankConfig) or as an NCCL 2.3.7 (older than libhvd takes).
 * Nothing here is ever called beyond ncclGetVersion: the loader rejects both. */
#define EXPORT __attribute__((visibility("default")))

EXPORT int ncclGetVersion(int *version) {
    *version = FAKE_NCCL_VERSION;
    return 0;
}
EXPORT int ncclGetUniqueId(void *id) {
    return 1;
}
#ifndef FAKE_NCCL_MISSING
EXPORT int ncclCommInitRankConfig(void) {
    return 1;
}
#endif
EXPORT int ncclCommDestroy(void) {
    return 1;
}
EXPORT int ncclCommAbort(void) {
    return 1;
}
EXPORT int ncclCommGetAsyncError(void) {
    return 1;
}
EXPORT const char *ncclGetErrorString(int r) {
    return "fake";
}
EXPORT int ncclGroupStart(void) {
    return 1;
}
EXPORT int ncclGroupEnd(void) {
    return 1;
}
EXPORT int ncclAllReduce(void) {
    return 1;
}
EXPORT int ncclReduce(void) {
    return 1;
}
EXPORT int ncclReduceScatter(void) {
    return 1;
}
EXPORT int ncclBroadcast(void) {
    return 1;
}
EXPORT int ncclAllGather(void) {
    return 1;
}
EXPORT int ncclSend(void) {
    return 1;
}
EXPORT int ncclRecv(void) {
    return 1;
}
