// What the opaque C handles point to.
#pragma once

#include <atomic>
#include <memory>

#include "engine/context.h"
#include "engine/request.h"

struct hvd_context {
    std::unique_ptr<hvd::engine::Context> ctx;
};

struct hvd_request {
    hvd::engine::RequestPtr req;
    std::atomic<int> waiters{0};  // threads inside hvd_request_wait
};
