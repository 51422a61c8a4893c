// SPDX-License-Identifier: Apache-2.0
// The GPU module loader against libraries this build made: a file that is not a module, a
// module of another ABI version, and (where the GPU module was built) the real module with
// NCCL libraries it must refuse (a symbol missing, a version too old) or take (PyPI's NCCL).
// Each case runs in a child process: a module is opened once per process.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "gpu/gpu_library.h"

namespace {

// The libraries' paths as this build made them; a packed copy of the checks
// (scripts/gpu_check.sh --pack) names where they are now with HVD_TEST_LIBRARY_DIR.
std::string library(const char *built) {
    const char *dir = std::getenv("HVD_TEST_LIBRARY_DIR");
    if (dir == nullptr) return built;
    std::string b = built;
    return std::string(dir) + b.substr(b.rfind('/'));
}

// Runs body in a child; the test fails unless the child returns true.
void in_child(const std::function<bool()> &body) {
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(body() ? 0 : 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

bool contains(const std::string &text, const char *part) {
    if (text.find(part) != std::string::npos) return true;
    std::fprintf(stderr, "expected '%s' in: %s\n", part, text.c_str());
    return false;
}

// Opening `path` fails with a problem naming the file and containing `part`.
void expect_refused(const char *path, const char *part) {
    in_child([&] {
        hvd::gpu::GpuLibrary lib;
        std::string problem;
        if (hvd::gpu::open_gpu_module(path, "", &lib, &problem)) return false;
        return contains(problem, path) && contains(problem, part);
    });
}

void test_missing_file(void **) {
    expect_refused("/nonexistent/libhvd-nccl.so.1", "No such file");
}

void test_not_a_module(void **) {
    expect_refused(library(HVD_FAKE_NO_ENTRY).c_str(), "not a libhvd GPU module");
}

void test_wrong_abi(void **) {
    expect_refused(library(HVD_FAKE_WRONG_ABI).c_str(), "GPU module ABI version 99");
}

#ifdef HVD_TEST_GPU_MODULE
// The real module, NCCL from nccl_library: opens (a missing NCCL or device is not a failure)
// and hands info to check.
void with_module(const char *nccl_library,
                 const std::function<bool(const hvd_gpu_info_t &)> &check) {
    in_child([&] {
        hvd::gpu::GpuLibrary lib;
        std::string problem;
        if (!hvd::gpu::open_gpu_module(library(HVD_TEST_GPU_MODULE).c_str(), nccl_library, &lib,
                                       &problem)) {
            std::fprintf(stderr, "%s\n", problem.c_str());
            return false;
        }
        // Devices: either some, or none with the reason.
        if ((lib.info.device_count > 0) == (lib.info.cuda_problem[0] != '\0')) return false;
        if (lib.info.runtime_version < 12000) return false;
        return check(lib.info);
    });
}

void test_nccl_missing_symbol(void **) {
    with_module(library(HVD_FAKE_NCCL_MISSING).c_str(), [](const hvd_gpu_info_t &info) {
        return info.nccl_version == 0 &&
               contains(info.nccl_problem, library(HVD_FAKE_NCCL_MISSING).c_str()) &&
               contains(info.nccl_problem, "no function ncclCommInitRankConfig");
    });
}

void test_nccl_too_old(void **) {
    with_module(library(HVD_FAKE_NCCL_OLD).c_str(), [](const hvd_gpu_info_t &info) {
        return info.nccl_version == 0 && contains(info.nccl_problem, "version 2.3.7") &&
               contains(info.nccl_problem, "older than 2.19.0");
    });
}

void test_nccl_absent(void **) {
    with_module("/nonexistent/libnccl.so.2", [](const hvd_gpu_info_t &info) {
        return info.nccl_version == 0 && contains(info.nccl_problem, "/nonexistent/libnccl.so.2") &&
               contains(info.nccl_problem, "HVD_NCCL_LIBRARY");
    });
}

#ifdef HVD_TEST_NCCL_LIBRARY
// The NCCL to take: the one HVD_NCCL_LIBRARY names, else the one this build found, else (a
// packed copy elsewhere, which that path may not reach) the system's.
const char *real_nccl() {
    if (const char *named = std::getenv("HVD_NCCL_LIBRARY")) return named;
    return std::getenv("HVD_TEST_LIBRARY_DIR") != nullptr ? "libnccl.so.2" : HVD_TEST_NCCL_LIBRARY;
}

// Whether a packed copy runs where no NCCL is to be found (then the real-NCCL cases skip,
// saying so). In a build, the NCCL it found must load.
bool no_real_nccl() {
    if (std::getenv("HVD_TEST_LIBRARY_DIR") == nullptr ||
        std::getenv("HVD_NCCL_LIBRARY") != nullptr)
        return false;
    void *h = dlopen(real_nccl(), RTLD_LAZY | RTLD_LOCAL);
    if (h != nullptr) {
        dlclose(h);
        return false;
    }
    std::fprintf(stderr, "skipped, no NCCL to load: %s\n", dlerror());
    return true;
}

void test_real_nccl(void **) {
    if (no_real_nccl()) skip();
    with_module(real_nccl(), [](const hvd_gpu_info_t &info) {
        if (info.nccl_version < 21900) {
            std::fprintf(stderr, "NCCL not loaded: %s\n", info.nccl_problem);
            return false;
        }
        return info.nccl_problem[0] == '\0' && contains(info.nccl_path, "libnccl.so.2");
    });
}

// NCCL_COMM_BLOCKING=1 would make the module's communicators blocking: NCCL is not used.
void test_blocking_nccl_refused(void **) {
    if (no_real_nccl()) skip();
    setenv("NCCL_COMM_BLOCKING", "1", 1);
    with_module(real_nccl(), [](const hvd_gpu_info_t &info) {
        return info.nccl_version == 0 && contains(info.nccl_problem, "NCCL_COMM_BLOCKING=1");
    });
    unsetenv("NCCL_COMM_BLOCKING");
}
#endif

// Through the process-wide loader: features and the reason a CUDA tensor is refused agree
// with what the module found.
void test_features_follow_devices(void **) {
    in_child([] {
        setenv("HVD_GPU_MODULE", library(HVD_TEST_GPU_MODULE).c_str(), 1);
        std::string problem;
        const hvd::gpu::GpuLibrary *lib = hvd::gpu::gpu_library(&problem);
        if (lib == nullptr) {
            std::fprintf(stderr, "%s\n", problem.c_str());
            return false;
        }
        uint64_t f = hvd::gpu::gpu_features();
        std::string why = hvd::gpu::cuda_unusable_reason();
        if (lib->info.device_count == 0)
            return f == 0 && contains(why, "no CUDA device is usable") &&
                   contains(why, library(HVD_TEST_GPU_MODULE).c_str());
        return (f & HVD_FEATURE_CUDA) != 0 && why.empty();
    });
}
#endif

// Without any module the loader says where it looked and what to install.
void test_no_module_anywhere(void **) {
    in_child([] {
        setenv("HVD_GPU_MODULE", "/nonexistent/libhvd-nccl.so.1", 1);
        std::string problem;
        if (hvd::gpu::gpu_library(&problem) != nullptr) return false;
        return contains(problem, "/nonexistent/libhvd-nccl.so.1") &&
               contains(problem, "libhvd-nccl1") && hvd::gpu::gpu_features() == 0 &&
               contains(hvd::gpu::cuda_unusable_reason(), "no libhvd GPU module");
    });
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),        cmocka_unit_test(test_not_a_module),
        cmocka_unit_test(test_wrong_abi),           cmocka_unit_test(test_no_module_anywhere),
#ifdef HVD_TEST_GPU_MODULE
        cmocka_unit_test(test_nccl_missing_symbol), cmocka_unit_test(test_nccl_too_old),
        cmocka_unit_test(test_nccl_absent),         cmocka_unit_test(test_features_follow_devices),
#ifdef HVD_TEST_NCCL_LIBRARY
        cmocka_unit_test(test_real_nccl),           cmocka_unit_test(test_blocking_nccl_refused),
#endif
#endif
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
