// SPDX-License-Identifier: Apache-2.0
// Requests are reused. A training step makes and releases hundreds, each of which cost an
// allocation of its ~700 bytes, its name's string (names are longer than a string holds
// inline) and the destruction of a mutex and a condition variable. A request whose last
// reference goes is reset (Request::reset_for_reuse) and kept by the releasing thread, or,
// past its stock, by the process, up to kMaxKept; make_request() takes one back. The
// reference count's block comes from a pool too.
#include <new>

#include "engine/request.h"
#include "util/block_pool.h"

namespace hvd::engine {

namespace {

constexpr size_t kMaxKept = 4096;

void delete_request(void *p) noexcept {
    delete static_cast<Request *>(p);
}

// The released requests, reset: live objects, deleted when there are too many to keep.
struct KeptRequests {
    static util::BlockPool &pool() {
        static util::BlockPool *p = new util::BlockPool(sizeof(Request), kMaxKept, delete_request);
        return *p;
    }
};

struct Recycle {
    void operator()(Request *r) const noexcept {
        try {
            r->reset_for_reuse();
        } catch (...) {  // cannot happen (moves and clears); never keep a half-reset one
            delete r;
            return;
        }
        KeptRequests::pool().give(util::thread_stock<KeptRequests>(), r, sizeof(Request));
    }
};

}  // namespace

RequestPtr make_request() {
    void *kept = KeptRequests::pool().take_kept(util::thread_stock<KeptRequests>());
    Request *r = kept != nullptr ? static_cast<Request *>(kept) : new Request();
    // Should the reference count's block not be had, shared_ptr hands r to Recycle.
    return RequestPtr(r, Recycle(), util::PooledAllocator<Request>());
}

}  // namespace hvd::engine
