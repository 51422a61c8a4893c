// SPDX-License-Identifier: Apache-2.0
// Byte-level tools for testing the rendezvous protocol's integrity over real sockets:
//  - MitmProxy: a man in the middle between one client and the server. It forwards every
//    frame (cut out of the byte stream by its length prefix) in both directions, each through
//    an edit function that may alter, drop, repeat, hold back or replace it.
//  - RawRank: a rank that speaks the protocol by hand (the handshake, then sealed frames), to
//    read the server's table whatever notices it receives.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "bootstrap/frame_mac.h"
#include "bootstrap/kv_auth.h"
#include "bootstrap/kv_protocol.h"
#include "bootstrap/socket_io.h"
#include "kv_test_util.h"

namespace kvtest {

using hvd::bootstrap::Fd;
using hvd::bootstrap::Frame;
using hvd::bootstrap::FrameDecoder;
using hvd::bootstrap::FrameMac;
using hvd::bootstrap::KvMsg;

class MitmProxy {
  public:
    // (index of the frame in its direction from 0, the frame's bytes) -> the bytes to forward.
    // Frames to the server: 0 is HELLO; to the client: 0 is CHALLENGE, 1 WELCOME. Called on
    // the proxy's thread.
    using Edit = std::function<std::string(size_t index, const std::string &frame)>;
    static std::string pass(size_t, const std::string &frame) { return frame; }

    MitmProxy(int server_port, Edit to_server, Edit to_client = pass)
        : listener_(hvd::bootstrap::listen_tcp(kLoopback, 0)),
          server_port_(server_port),
          edit_{std::move(to_server), std::move(to_client)} {
        port_ = hvd::bootstrap::bound_port(listener_.get());
        thread_ = std::thread([this] { run(); });
    }
    ~MitmProxy() {
        stop_.store(true);
        thread_.join();
    }
    MitmProxy(const MitmProxy &) = delete;
    MitmProxy &operator=(const MitmProxy &) = delete;

    int port() const { return port_; }

  private:
    struct Direction {
        Fd *from;
        Fd *to;
        std::string pending;  // bytes of a frame not complete yet
        size_t index = 0;
    };

    void run() {
        try {
            relay();
        } catch (const hvd::Error &) {
            // The test sees the connection fail; the proxy thread must not terminate the run.
        }
    }

    void relay() {
        Deadline accept_by = Deadline::after_ms(kTimeoutMs);
        while (!stop_.load() && !accept_by.expired() &&
               !hvd::bootstrap::wait_readable(listener_.get(), accept_by, 50)) {
        }
        if (stop_.load() || accept_by.expired()) return;
        Fd client = hvd::bootstrap::accept_tcp(listener_.get());
        Fd server =
            hvd::bootstrap::connect_tcp(kLoopback, server_port_, Deadline::after_ms(kTimeoutMs));
        Direction dirs[2] = {{&client, &server, {}, 0}, {&server, &client, {}, 0}};
        while (!stop_.load() && client.valid() && server.valid()) {
            pollfd p[2] = {{client.get(), POLLIN, 0}, {server.get(), POLLIN, 0}};
            if (::poll(p, 2, 50) <= 0) continue;
            for (int d = 0; d < 2 && client.valid() && server.valid(); ++d)
                if (p[d].revents) forward(dirs[d], edit_[d]);
        }
    }

    // Reads what arrived and forwards each complete frame through the edit; an end of either
    // side closes both.
    void forward(Direction &d, const Edit &edit) {
        bool open = hvd::bootstrap::read_available(d.from->get(), &d.pending, 1 << 20) ==
                    hvd::bootstrap::ReadResult::kOpen;
        std::string out;
        while (d.pending.size() >= 4) {
            uint32_t len = hvd::bootstrap::decode_u32(d.pending.substr(0, 4));
            if (d.pending.size() < 4 + size_t{len}) break;
            out += edit(d.index++, d.pending.substr(0, 4 + len));
            d.pending.erase(0, 4 + len);
        }
        try {
            if (!out.empty())
                hvd::bootstrap::send_all(d.to->get(), out, Deadline::after_ms(kTimeoutMs), "mitm");
        } catch (const hvd::Error &) {
            open = false;
        }
        if (!open) {
            d.from->reset();
            d.to->reset();
        }
    }

    Fd listener_;
    int port_ = 0;
    int server_port_;
    Edit edit_[2];
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

// A rank speaking the protocol by hand. Every wait is bounded by kTimeoutMs; a failure fails
// the running test.
class RawRank {
  public:
    RawRank(int port, int32_t rank, int32_t size) : rank_(rank), size_(size) {
        fd_ = hvd::bootstrap::connect_tcp(kLoopback, port, Deadline::after_ms(kTimeoutMs));
        Frame challenge = read();
        hvd::bootstrap::expect_frame(challenge, KvMsg::kChallenge, 2, "test");
        server_version = hvd::bootstrap::decode_u32(challenge.fields[0]);
        server_nonce_ = challenge.fields[1];
    }

    uint32_t server_version = 0;

    // Sends HELLO claiming `version` and returns the answer; after a WELCOME, frames are
    // sealed and verified.
    Frame hello(uint32_t version = hvd::bootstrap::kKvProtocolVersion) {
        using namespace hvd::bootstrap;
        std::string nonce = new_nonce();
        send(encode_frame(KvMsg::kHello,
                          {encode_u32(version), encode_u32(static_cast<uint32_t>(rank_)),
                           encode_u32(static_cast<uint32_t>(size_)), nonce,
                           proof_field(client_proof(kSecret, server_nonce_, rank_, size_))}));
        Frame answer = read();
        if (answer.type == KvMsg::kWelcome) {
            in_.set_max_frame_bytes(kMaxFrameBytes);
            mac_ =
                std::make_unique<FrameMac>(kSecret, server_nonce_, nonce, FrameMac::Side::kClient);
        }
        return answer;
    }

    // The key's value in the server's table, or `sentinel` when it has none: a GET, then a
    // PUT of the sentinel, which answers the GET if it was parked on a missing key.
    std::string value_or(const std::string &key, const std::string &sentinel) {
        using namespace hvd::bootstrap;
        uint64_t id = next_id_++;
        std::string frames = mac_->seal(KvMsg::kGet, {encode_u64(id), key});
        frames += mac_->seal(KvMsg::kPut, {key, sentinel});
        send(frames);
        for (;;) {
            Frame f = read();
            if (f.type == KvMsg::kValue && decode_u64(f.fields[0]) == id) return f.fields[1];
        }
    }

  private:
    void send(const std::string &bytes) {
        hvd::bootstrap::send_all(fd_.get(), bytes, Deadline::after_ms(kTimeoutMs), "raw rank");
    }

    Frame read() {
        Deadline deadline = Deadline::after_ms(kTimeoutMs);
        Frame f;
        for (;;) {
            if (mac_ ? mac_->next(&in_, &f) : in_.next(&f)) return f;
            if (closed_) fail_msg("raw rank %d: the server closed the connection", rank_);
            if (deadline.expired()) fail_msg("raw rank %d: no frame from the server", rank_);
            if (!hvd::bootstrap::wait_readable(fd_.get(), deadline, 100)) continue;
            closed_ = hvd::bootstrap::read_available(fd_.get(), in_.buffer(), 1 << 20) ==
                      hvd::bootstrap::ReadResult::kClosed;
        }
    }

    int32_t rank_, size_;
    Fd fd_;
    std::string server_nonce_;
    FrameDecoder in_{hvd::bootstrap::kMaxHandshakeFrameBytes};
    std::unique_ptr<FrameMac> mac_;
    uint64_t next_id_ = 1;
    bool closed_ = false;
};

}  // namespace kvtest
