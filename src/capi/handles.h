// SPDX-License-Identifier: Apache-2.0
// What the opaque C handles point to.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "engine/context.h"
#include "engine/process_set_table.h"
#include "engine/request.h"

struct hvd_process_set {
    hvd::engine::ProcessSetPtr info;  // members and this rank's index
};

struct hvd_context {
    std::unique_ptr<hvd::engine::Context> ctx;

    // Handles made by hvd_process_set_create, freed by destroy or finalize.
    std::mutex process_sets_mu;
    std::map<hvd_process_set *, std::unique_ptr<hvd_process_set>> process_sets;

    // The set behind a handle (NULL: all ranks); throws HVD_ERR_INVALID_ARG for a handle
    // this context did not make or already destroyed.
    hvd::engine::ProcessSetPtr process_set(hvd_process_set_h ps, const char *fn);
};

struct hvd_request {
    hvd::engine::RequestPtr req;
    // The engine that runs it, for a waiter that drives it (expired: wait only).
    std::weak_ptr<hvd::engine::Engine> engine;
    std::atomic<int> waiters{0};  // threads inside hvd_request_wait

    // From a per-thread free list (capi_request.cc): a step makes and releases hundreds at
    // once on the caller's thread, more than glibc's per-thread cache keeps of one size.
    static void *operator new(size_t bytes);
    static void operator delete(void *p, size_t bytes) noexcept;
};
