// SPDX-License-Identifier: Apache-2.0
#include "gpu/gpu_library.h"

#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "common/error.h"
#include "config/read.h"

namespace hvd::gpu {

namespace {

constexpr const char *kModuleName = "libhvd-nccl.so.1";

// The directory of the file holding this code (libhvd.so, or a program linking libhvd
// statically), with a trailing slash; "" if unknown.
std::string own_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&gpu_features), &info) == 0 || info.dli_fname == nullptr)
        return "";
    std::string file = info.dli_fname;
    size_t slash = file.rfind('/');
    return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}

std::vector<std::string> module_candidates() {
    const char *env = config::get_string(config::Setting::kGpuModule);
    if (env != nullptr) return {env};
    std::vector<std::string> out;
    std::string dir = own_directory();
    if (!dir.empty()) out.push_back(dir + kModuleName);
    out.push_back(kModuleName);
    return out;
}

struct Loaded {
    std::once_flag once;
    GpuLibrary lib;
    bool ok = false;
    std::string problem;
};

Loaded &loaded() {
    static Loaded l;
    return l;
}

}  // namespace

void GpuLibrary::throw_failure(const char *what, const hvd_gpu_err_t &err) {
    throw Error(HVD_ERR_DEVICE, strprintf("%s: %s", what, err.text));
}

bool open_gpu_module(const std::string &path, const std::string &nccl_library, GpuLibrary *out,
                     std::string *problem) {
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char *e = dlerror();
        std::string why = e != nullptr ? e : "cannot be opened";
        // dlerror names the file itself when it could not be found or read.
        *problem = why.rfind(path, 0) == 0 ? why : path + ": " + why;
        return false;
    }
    auto get = reinterpret_cast<hvd_gpu_module_get_fn>(dlsym(h, HVD_GPU_MODULE_ENTRY));
    if (get == nullptr) {
        *problem = path + ": not a libhvd GPU module (it has no " HVD_GPU_MODULE_ENTRY ")";
        dlclose(h);
        return false;
    }
    uint32_t module_abi = 0;
    const hvd_gpu_module_t *api = get(HVD_GPU_MODULE_ABI_VERSION, &module_abi);
    if (api == nullptr || api->abi_version != HVD_GPU_MODULE_ABI_VERSION ||
        api->struct_size < sizeof(hvd_gpu_module_t)) {
        *problem = strprintf(
            "%s: GPU module ABI version %u, and this libhvd needs version %u "
            "(install the GPU module of the same libhvd release)",
            path.c_str(), api != nullptr ? api->abi_version : module_abi,
            HVD_GPU_MODULE_ABI_VERSION);
        dlclose(h);
        return false;
    }
    GpuLibrary lib;
    lib.api = api;
    lib.path = path;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(get), &info) != 0 && info.dli_fname != nullptr)
        lib.path = info.dli_fname;
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    if (api->open(nccl_library.empty() ? nullptr : nccl_library.c_str(), &lib.info, &err) != 0) {
        *problem = lib.path + ": " + err.text;
        // The module stays loaded: its CUDA runtime may have started threads.
        return false;
    }
    *out = lib;  // the handle is kept for the process's lifetime
    return true;
}

const GpuLibrary *gpu_library(std::string *problem) {
    Loaded &l = loaded();
    std::call_once(l.once, [&l] {
        const char *nccl = config::get_string(config::Setting::kNcclLibrary);
        std::string tried;
        for (const std::string &path : module_candidates()) {
            std::string why;
            if (open_gpu_module(path, nccl != nullptr ? nccl : "", &l.lib, &why)) {
                l.ok = true;
                return;
            }
            tried += (tried.empty() ? "" : "; ") + why;
        }
        l.problem = "no libhvd GPU module could be loaded (tried " + tried +
                    "); install libhvd's GPU module (Debian: libhvd-nccl1) or set HVD_GPU_MODULE";
    });
    if (!l.ok && problem != nullptr) *problem = l.problem;
    return l.ok ? &l.lib : nullptr;
}

std::string cuda_unusable_reason() {
    std::string problem;
    const GpuLibrary *lib = gpu_library(&problem);
    if (lib == nullptr) return problem;
    if (!lib->cuda_usable())
        return strprintf("no CUDA device is usable: %s (GPU module %s)", lib->info.cuda_problem,
                         lib->path.c_str());
    return "";
}

uint64_t gpu_features() {
    const GpuLibrary *lib = gpu_library(nullptr);
    if (lib == nullptr || !lib->cuda_usable()) return 0;
    return HVD_FEATURE_CUDA | (lib->nccl_usable() ? HVD_FEATURE_NCCL : 0);
}

}  // namespace hvd::gpu
