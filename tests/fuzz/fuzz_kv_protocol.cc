// SPDX-License-Identifier: Apache-2.0
// The rendezvous protocol as both ends read it. The input's first byte sets the size of the
// pieces the rest arrives in (as a TCP stream would cut it); the rest is the byte stream, read
// once as the server reads a client (HELLO against its challenge, then PUT / GET / BYE into a
// key-value table) and once as the client reads the server (CHALLENGE, the answer to HELLO,
// then VALUE / FAILED notices). Malformed bytes must end in hvd::Error, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bootstrap/kv_messages.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/kv_table.h"
#include "common/error.h"
#include "kv_fixture.h"

namespace {

using namespace hvd::bootstrap;

// Feeds `stream` to the decoder in pieces of `piece` bytes; `on_frame` returns false to stop.
template <typename OnFrame>
void feed(FrameDecoder &in, const std::string &stream, size_t piece, OnFrame on_frame) {
    for (size_t off = 0; off < stream.size(); off += piece) {
        in.buffer()->append(stream, off, piece);
        Frame f;
        while (in.next(&f))
            if (!on_frame(std::move(f))) return;
    }
}

void as_server(const std::string &stream, size_t piece) {
    FrameDecoder in(kMaxHandshakeFrameBytes);
    KvTable table;
    bool authed = false;
    uint64_t gets = 0;
    feed(in, stream, piece, [&](Frame f) {
        if (!authed) {
            HelloClaim claim;
            if (!read_hello(f, fuzz::kKvSecret, fuzz::kKvServerNonce, "fuzz", &claim).empty())
                return false;
            authed = true;
            in.set_max_frame_bytes(kMaxFrameBytes);
            return true;
        }
        RankRequest req = read_rank_request(std::move(f), "fuzz");
        if (req.type == KvMsg::kBye) return false;
        if (req.type == KvMsg::kPut)
            table.put(req.key, req.value);
        else if (table.get_or_park(req.key, KvWaiter{1, req.request_id}) == nullptr)
            ++gets;
        return true;
    });
    if (table.num_parked() > gets) __builtin_trap();
    table.drop_waiters(1);
    if (table.num_parked() != 0) __builtin_trap();
}

void as_client(const std::string &stream, size_t piece) {
    FrameDecoder in(kMaxHandshakeFrameBytes);
    int step = 0;
    std::string server_nonce;
    feed(in, stream, piece, [&](Frame f) {
        if (step == 0) {
            server_nonce = read_challenge(f, "fuzz", fuzz::kKvRank);
        } else if (step == 1) {
            HelloAnswer a = read_hello_answer(f, fuzz::kKvSecret, fuzz::kKvClientNonce,
                                              server_nonce, "fuzz", fuzz::kKvRank);
            if (a.retry) return false;
            in.set_max_frame_bytes(kMaxFrameBytes);
        } else {
            read_server_notice(std::move(f), "fuzz");
        }
        ++step;
        return true;
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    size_t piece = size_t{data[0]} + 1;
    std::string stream(reinterpret_cast<const char *>(data + 1), size - 1);
    try {
        as_server(stream, piece);
    } catch (const hvd::Error &) {
    }
    try {
        as_client(stream, piece);
    } catch (const hvd::Error &) {
    }
    return 0;
}
