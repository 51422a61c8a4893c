// SPDX-License-Identifier: Apache-2.0
#include "check_build.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hvd/hvd.h"

#ifndef HVD_INSTALL_LIBDIR_DEF
#define HVD_INSTALL_LIBDIR_DEF "lib"
#endif

namespace hvdrun {
namespace {

std::string dir_of(const std::string &path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string self_path(const std::string &argv0) {
    std::vector<char> buf(4096);
    ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    return n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : argv0;
}

std::vector<std::string> candidates(const std::string &hvdrun_path) {
    std::vector<std::string> paths;
    const char *explicit_path = std::getenv("HVD_LIBRARY");
    if (explicit_path != nullptr && explicit_path[0] != '\0') return {explicit_path};
    paths.push_back(dir_of(self_path(hvdrun_path)) + "/../" HVD_INSTALL_LIBDIR_DEF "/libhvd.so.1");
    paths.push_back("libhvd.so.1");
    return paths;
}

// Whether `python3 -c "import <module>"` succeeds, within 60 seconds.
bool python_imports(const std::string &module) {
    std::string cmd = "timeout 60 python3 -c 'import " + module + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
}

std::string mark(bool on) {
    return on ? "    [X] " : "    [ ] ";
}

}  // namespace

bool check_build_report(const std::string &hvdrun_path, std::string *report) {
    void *lib = nullptr;
    std::string tried, loaded;
    for (const std::string &path : candidates(hvdrun_path)) {
        lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib != nullptr) {
            loaded = path;
            break;
        }
        const char *why = dlerror();
        tried += "  " + path + ": " + (why != nullptr ? why : "not loadable") + "\n";
    }
    if (lib == nullptr) {
        *report = "libhvd: not found; tried:\n" + tried +
                  "(set HVD_LIBRARY to the path of libhvd.so.1)\n";
        return false;
    }
    using VersionFn = const char *(*)();
    using FeaturesFn = uint64_t (*)();
    auto version = reinterpret_cast<VersionFn>(dlsym(lib, "hvd_version_string"));
    auto features = reinterpret_cast<FeaturesFn>(dlsym(lib, "hvd_features"));
    if (version == nullptr || features == nullptr) {
        *report = "libhvd: " + loaded + " lacks hvd_version_string or hvd_features\n";
        return false;
    }
    uint64_t f = features();
    std::string text = "libhvd v" + std::string(version()) + " (" + loaded + ")\n\n";
    text += "Available Frameworks:\n";
    text += mark(true) + "C API (hvd/hvd.h)\n";
    bool python = python_imports("hvd");
    text += mark(python) + "Python (hvd, for python3)\n";
    text += mark(python && python_imports("hvd.torch")) + "PyTorch (hvd.torch)\n";
    text += "\nAvailable Controllers:\n";
    text += mark(true) + "libhvd (negotiation through rank 0, response cache)\n";
    text += "\nAvailable Tensor Operations:\n";
    text += mark(true) + "shared memory (ranks of one host)\n";
    text += mark((f & HVD_FEATURE_UCX) != 0) + "UCX\n";
    text += mark((f & HVD_FEATURE_CUDA) != 0) + "CUDA\n";
    text += mark((f & HVD_FEATURE_NCCL) != 0) + "NCCL\n";
    text += "\nTopology:\n";
    text += mark((f & HVD_FEATURE_HWLOC) != 0) + "hwloc\n";
    *report = text;
    // The library stays loaded until hvdrun exits, right after the report: unloading it would
    // orphan what its static constructors (and UCX's) allocated.
    return true;
}

}  // namespace hvdrun
