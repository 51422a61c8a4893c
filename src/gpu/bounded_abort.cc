// SPDX-License-Identifier: Apache-2.0
#include "gpu/bounded_abort.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/log.h"

namespace hvd::gpu {

namespace {

// Shared by the waiting caller and the helper, which may outlive the wait.
struct Progress {
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0;
};

void abort_one(const hvd_gpu_module_t *api, void *comm, int32_t rank, Progress *progress) {
    hvd_gpu_err_t err;
    err.text[0] = '\0';
    if (api->nccl_comm_abort(comm, &err) != 0)
        HVD_LOG(kWarning, rank, "ncclCommAbort: %s", err.text);
    {
        std::lock_guard<std::mutex> lock(progress->mu);
        ++progress->done;
    }
    progress->cv.notify_all();
}

}  // namespace

bool abort_within(const hvd_gpu_module_t *api, const std::vector<void *> &comms,
                  std::chrono::milliseconds limit, int32_t rank) {
    if (comms.empty()) return true;
    const size_t total = comms.size();
    auto progress = std::make_shared<Progress>();
    std::vector<std::thread> helpers;
    helpers.reserve(total);
    std::vector<void *> unstarted;
    for (void *comm : comms) {
        try {
            helpers.emplace_back(
                [api, comm, rank, progress] { abort_one(api, comm, rank, progress.get()); });
        } catch (const std::system_error &e) {
            HVD_LOG(kWarning, rank, "ncclCommAbort on the calling thread (no helper thread: %s)",
                    e.what());
            unstarted.push_back(comm);
        }
    }
    // Rather than leave a communicator unaborted: here, unbounded, once the others run (two
    // unstarted ones that wait on each other's kernels would not end; no thread to spare is a
    // failing process anyway).
    for (void *comm : unstarted)
        abort_one(api, comm, rank, progress.get());
    std::unique_lock<std::mutex> lock(progress->mu);
    const bool finished =
        progress->cv.wait_for(lock, limit, [&] { return progress->done == total; });
    const size_t left = total - progress->done;
    lock.unlock();
    if (finished) {
        for (std::thread &helper : helpers)
            helper.join();
        return true;
    }
    for (std::thread &helper : helpers)
        helper.detach();
    HVD_LOG(kWarning, rank,
            "ncclCommAbort: %zu of %zu communicator(s) still aborting after %lld ms (NCCL waits "
            "for device work); going on, they finish in the background",
            left, total, static_cast<long long>(limit.count()));
    return false;
}

}  // namespace hvd::gpu
