// SPDX-License-Identifier: Apache-2.0
#include "gpu/module/nccl_table.h"

#include <dlfcn.h>

#include <cstdio>

namespace hvd::gpu_module {

namespace {

template <typename Fn>
bool resolve(void *handle, const char *name, Fn *fn, std::string *missing) {
    *fn = reinterpret_cast<Fn>(dlsym(handle, name));
    if (*fn == nullptr && missing->empty()) *missing = name;
    return *fn != nullptr;
}

std::string version_string(int v) {
    char buf[32];
    // NCCL numbers 2.x.y as 2xxyy from 2.9 on (older: 2xyy).
    if (v >= 20900)
        std::snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else
        std::snprintf(buf, sizeof buf, "%d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
    return buf;
}

}  // namespace

bool load_nccl(const std::string &library, NcclTable *table, std::string *problem) {
    *table = NcclTable{};
    const std::string name = library.empty() ? "libnccl.so.2" : library;
    const char *where = library.empty() ? " through the system's library search path "
                                          "(LD_LIBRARY_PATH, ld.so.cache); set HVD_NCCL_LIBRARY "
                                          "to NCCL's path to use another"
                                        : " (HVD_NCCL_LIBRARY)";
    void *h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char *e = dlerror();
        *problem = "NCCL: cannot open " + name + where + ": " + (e ? e : "unknown error");
        return false;
    }
    NcclTable t;
    t.handle = h;
    t.path = name;
    std::string missing;
    resolve(h, "ncclGetVersion", &t.GetVersion, &missing);
    resolve(h, "ncclGetUniqueId", &t.GetUniqueId, &missing);
    resolve(h, "ncclCommInitRankConfig", &t.CommInitRankConfig, &missing);
    resolve(h, "ncclCommDestroy", &t.CommDestroy, &missing);
    resolve(h, "ncclCommAbort", &t.CommAbort, &missing);
    resolve(h, "ncclCommGetAsyncError", &t.CommGetAsyncError, &missing);
    resolve(h, "ncclGetErrorString", &t.GetErrorString, &missing);
    resolve(h, "ncclGroupStart", &t.GroupStart, &missing);
    resolve(h, "ncclGroupEnd", &t.GroupEnd, &missing);
    resolve(h, "ncclAllReduce", &t.AllReduce, &missing);
    resolve(h, "ncclReduce", &t.Reduce, &missing);
    resolve(h, "ncclReduceScatter", &t.ReduceScatter, &missing);
    resolve(h, "ncclBroadcast", &t.Broadcast, &missing);
    resolve(h, "ncclAllGather", &t.AllGather, &missing);
    resolve(h, "ncclSend", &t.Send, &missing);
    resolve(h, "ncclRecv", &t.Recv, &missing);
    std::string optional;
    resolve(h, "ncclGetLastError", &t.GetLastError, &optional);
    if (t.GetVersion != nullptr && t.GetVersion(&t.version) != ncclSuccess) t.version = 0;
    if (!missing.empty() || t.version < kMinNcclVersion) {
        *problem = "NCCL: " + name + " is not usable: " +
                   (!missing.empty()
                        ? "it has no function " + missing
                        : "its version " + version_string(t.version) + " is older than " +
                              version_string(kMinNcclVersion) + ", the oldest libhvd supports");
        dlclose(h);
        return false;
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(t.GetVersion), &info) != 0 && info.dli_fname != nullptr)
        t.path = info.dli_fname;
    *table = t;
    return true;
}

}  // namespace hvd::gpu_module
