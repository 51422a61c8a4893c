// SPDX-License-Identifier: Apache-2.0
// The rendezvous: a small TCP key-value server that every rank of one job connects to,
// authenticated with the job's secret, and that doubles as the job's failure detector.
//
// Protocol (framed messages over TCP, wire format in kv_protocol.h):
//  - Mutual challenge-response: the server sends a nonce; the client answers
//    HMAC-SHA256(secret, "hvd-kv client"|nonce_s|rank|size) with its own nonce; the server
//    answers HMAC-SHA256(secret, "hvd-kv server"|nonce_c|nonce_s) (kv_auth.h). The secret never
//    crosses the wire. A peer failing authentication is dropped and logged; it never sees any
//    value.
//  - Every frame after the handshake, both ways, carries an HMAC-SHA256 under a key of this
//    connection (from the secret and both nonces) over its sequence number and its bytes
//    (frame_mac.h): a frame altered, replayed, reordered or spliced from another connection
//    closes the connection ("frame authentication failed"); a rank's counts as its failure.
//  - PUT key value / GET key (answered when the key exists; the client's wait is bounded).
//    A PUT of an existing key replaces its value.
//  - BYE: the client leaves cleanly.
//  - A client whose connection closes without BYE has died: the server sends FAILED(rank) to
//    every other connected client, and to ranks that join later. Server death is seen by
//    clients as EOF.
// The server runs on its own thread, serves one job of `size` ranks, and stops by itself
// once every rank has connected and then left (BYE or died), or when `idle_timeout_ms`
// passes with no client connected (none ever connected, or all that did have left while
// other ranks never came: such a job cannot complete anyway).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "hvd/hvd.h"

namespace hvd::bootstrap {

class KvServer {
  public:
    // Binds addr:port (port 0: any free port; addr "" or "0.0.0.0": all IPv4 interfaces; else
    // a host name or address) and starts serving on a background thread. size: ranks expected,
    // or 0 if the first authenticated client's declared size is taken. idle_timeout_ms < 0:
    // no idle stop. Throws hvd::Error(HVD_ERR_TRANSPORT) if it can't bind,
    // HVD_ERR_INVALID_ARG for a negative size or a port outside 0..65535.
    KvServer(const std::string &addr, int port, const std::string &secret, int32_t size,
             int64_t idle_timeout_ms);
    // Stops the thread (closing every connection: clients see kServerLost) and joins it.
    // Returns within one poll round.
    ~KvServer();
    KvServer(const KvServer &) = delete;
    KvServer &operator=(const KvServer &) = delete;

    int port() const;  // the bound port

    // What the server holds, as of its last poll round (for tests and diagnostics).
    struct Stats {
        size_t connections = 0;       // open client connections, authenticated or not
        size_t unauthenticated = 0;   // of which not yet authenticated
        size_t buffered_bytes = 0;    // capacity of every connection's in and out buffers
        uint64_t dropped = 0;         // unauthenticated clients closed so far
        int unauthenticated_cap = 0;  // the most unauthenticated connections held at once
    };
    Stats stats() const;  // thread-safe
    // True once the thread has stopped by itself: every expected rank connected and then
    // left, or the idle timeout passed. Thread-safe.
    bool finished() const;
    // Waits until finished() or the deadline; returns finished(). Thread-safe.
    bool wait_finished(const Deadline &deadline);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// One rank's connection. Methods are thread-safe but serialised by one mutex: a
// poll_failures() call waits while another thread is inside get() (fd() never waits).
class KvClient {
  public:
    static constexpr int64_t kPutTimeoutMs = 30000;  // put() blocks only if the server stalls
    static constexpr int64_t kByeTimeoutMs = 5000;   // bye() waits at most this for the server

    // Connects to addr:port, retrying connection refusals until the deadline (the server may
    // not be up yet), and authenticates as `rank` of `size`. Throws hvd::Error:
    // HVD_ERR_TIMED_OUT (no server in time), HVD_ERR_TRANSPORT (host name does not resolve,
    // auth failed, rejected — e.g. rank already joined or size mismatch —, protocol error),
    // HVD_ERR_INVALID_ARG (rank outside [0,size), port outside 1..65535), each with a message
    // naming the address.
    KvClient(const std::string &addr, int port, const std::string &secret, int32_t rank,
             int32_t size, const Deadline &deadline);
    ~KvClient();  // closes the socket without BYE if bye() was not called (= this rank died)
    KvClient(const KvClient &) = delete;
    KvClient &operator=(const KvClient &) = delete;

    int32_t rank() const;
    int32_t size() const;

    // Sends without waiting for an answer (bounded by kPutTimeoutMs should the server stall).
    // Values up to 64 MiB. Throws HVD_ERR_PEER_FAILED if the server is gone,
    // HVD_ERR_NOT_READY after bye(), HVD_ERR_INVALID_ARG for an oversized value.
    void put(const std::string &key, const std::string &value);
    // Blocks until the key exists or the deadline passes (HVD_ERR_TIMED_OUT naming the key).
    // Throws HVD_ERR_PEER_FAILED naming the rank if any rank has been reported failed (before
    // or while waiting), or naming the server if it went away.
    std::string get(const std::string &key, const Deadline &deadline);
    // Everyone puts then gets: returns values of `key_prefix/<r>` for r in [0,size), all GETs
    // in flight at once. Errors as put and get.
    std::vector<std::string> all_gather(const std::string &key_prefix, const std::string &mine,
                                        const Deadline &deadline);

    // The socket, for the owner's poll/epoll loop: readable means a notice (or EOF) is there.
    // -1 once the connection is closed (after bye() or after kServerLost was detected; the
    // socket is closed then, which also removes it from any epoll set).
    int fd() const;
    // Non-blocking: reads whatever notices are pending. Returns the ranks reported failed
    // since the last call (each rank once); the loss of the server itself (EOF or a socket
    // error: the process hosting it died) is reported once as kServerLost and marks the
    // client closed. Never throws for a lost connection.
    static constexpr int32_t kServerLost = -1;
    std::vector<int32_t> poll_failures();

    // Leaves cleanly: sends BYE and waits (at most kByeTimeoutMs) for the server to close the
    // connection, which proves everything sent before was processed. Does not wait for other
    // ranks. Never throws; a second call does nothing.
    void bye();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::bootstrap
