// SPDX-License-Identifier: Apache-2.0
#include "transport/reachability.h"

#include <poll.h>

namespace hvd::transport {

namespace {

// Upper bound of one sleep between progress calls.
constexpr int64_t kMaxSleepMs = 10;

}  // namespace

std::vector<Unreachable> unreachable_peers(Transport &t, const Deadline &deadline) {
    const int32_t n = t.size();
    const int32_t me = t.rank();
    std::vector<Completion> sends(n), recvs(n);
    std::vector<uint8_t> in(n, 0);
    const uint8_t token = 1;
    for (int32_t peer = 0; peer < n; ++peer) {
        if (peer == me) continue;
        t.irecv(make_tag(Channel::kReach, 0, peer, 0), kTagFullMask, &in[peer], 1, &recvs[peer]);
        t.isend(peer, make_tag(Channel::kReach, 0, me, 0), &token, 1, &sends[peer]);
    }
    std::vector<bool> reported(n, false);
    auto settled = [&](int32_t peer) {
        return peer == me || reported[peer] || (sends[peer].done && recvs[peer].done);
    };
    for (;;) {
        bool progressed = t.progress();
        for (int32_t peer : t.take_failed_peers())
            reported[peer] = true;
        bool all = true;
        for (int32_t peer = 0; peer < n; ++peer) {
            if (peer == me) continue;
            for (const Completion *c : {&sends[peer], &recvs[peer]})
                if (c->done && c->status != HVD_OK) reported[peer] = true;
            all = all && settled(peer);
        }
        if (all || deadline.expired()) break;
        if (progressed || !t.arm()) continue;
        struct pollfd pfd = {t.event_fd(), POLLIN, 0};
        ::poll(&pfd, 1, static_cast<int>(deadline.remaining_ms(kMaxSleepMs)));
    }
    std::vector<Unreachable> bad;
    for (int32_t peer = 0; peer < n; ++peer) {
        if (peer != me && (reported[peer] || !settled(peer)))
            bad.push_back({peer, reported[peer], ""});
    }
    if (!bad.empty()) t.abort_all(HVD_ERR_TRANSPORT);
    return bad;
}

}  // namespace hvd::transport
