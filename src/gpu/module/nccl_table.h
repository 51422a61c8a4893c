// SPDX-License-Identifier: Apache-2.0
// NCCL's functions, loaded with dlopen into a table: the module works (host-staged path) where
// NCCL is absent, and HVD_NCCL_LIBRARY can name another NCCL than the system's.
#pragma once

#include <nccl.h>

#include <string>

namespace hvd::gpu_module {

// The oldest NCCL the module uses: non-blocking communicators (ncclCommInitRankConfig, 2.14),
// whose background initialisation no longer writes through the caller's communicator pointer
// after the call has returned (2.18), and which aborts communicators from several threads at
// once (2.19; gpu/bounded_abort.cc does).
constexpr int kMinNcclVersion = 21900;

struct NcclTable {
    void *handle = nullptr;
    int version = 0;
    std::string path;  // what was opened
    ncclResult_t (*GetVersion)(int *) = nullptr;
    ncclResult_t (*GetUniqueId)(ncclUniqueId *) = nullptr;
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int,
                                       ncclConfig_t *) = nullptr;
    ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
    ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *) = nullptr;
    const char *(*GetErrorString)(ncclResult_t) = nullptr;
    const char *(*GetLastError)(ncclComm_t) = nullptr;  // optional (older NCCL lacks it)
    ncclResult_t (*GroupStart)() = nullptr;
    ncclResult_t (*GroupEnd)() = nullptr;
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t) = nullptr;
    ncclResult_t (*Reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                           ncclComm_t, cudaStream_t) = nullptr;
    ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                  ncclComm_t, cudaStream_t) = nullptr;
    ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t) = nullptr;
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                              cudaStream_t) = nullptr;
    ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
                         cudaStream_t) = nullptr;
    ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
};

// Opens `library` ("" = "libnccl.so.2" through the system's loader) and resolves every
// function. Returns false with *problem naming the library, what was searched and what failed
// (not found, a missing symbol, a version older than kMinNcclVersion); the table is then empty.
bool load_nccl(const std::string &library, NcclTable *table, std::string *problem);

}  // namespace hvd::gpu_module
