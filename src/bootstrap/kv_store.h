// The rendezvous: a small TCP key-value server that every rank of one job connects to,
// authenticated with the job's secret, and that doubles as the job's failure detector.
//
// Protocol (framed messages over TCP, lengths little-endian u32):
//  - Mutual challenge-response: server sends a nonce, client answers HMAC-SHA256(secret,
//    "client"|nonce|rank|size) and its own nonce, server answers HMAC(secret,"server"|nonce2).
//    A peer failing authentication is dropped and logged; it never sees any value.
//  - PUT key value / GET key (answered when the key exists; the client's wait is bounded).
//  - BYE: the client leaves cleanly.
//  - A client whose connection closes without BYE has died: the server sends FAILED(rank) to
//    every other connected client. Server death is seen by clients as EOF.
// The server runs on its own thread, serves one job of `size` ranks, and stops by itself
// once every rank has connected and then left (BYE or died), or when `idle_timeout_ms`
// passes with no client ever connecting.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "hvd/hvd.h"

namespace hvd::bootstrap {

class KvServer {
public:
    // Binds addr:port (port 0: any free port; addr "" or "0.0.0.0": all interfaces) and starts
    // serving on a background thread. size: ranks expected, or 0 if the first authenticated
    // client's declared size is taken. Throws hvd::Error(HVD_ERR_TRANSPORT) if it can't bind.
    KvServer(const std::string &addr, int port, const std::string &secret, int32_t size,
             int64_t idle_timeout_ms);
    ~KvServer();  // stops the thread (closing every connection) and joins it
    KvServer(const KvServer &) = delete;
    KvServer &operator=(const KvServer &) = delete;

    int port() const;  // the bound port
    // True once every expected rank has connected and then left; the thread has exited.
    bool finished() const;
    // Waits until finished() or the deadline; returns finished().
    bool wait_finished(const Deadline &deadline);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class KvClient {
public:
    // Connects to addr:port, retrying connection refusals until the deadline (the server may
    // not be up yet), and authenticates as `rank` of `size`. Throws hvd::Error:
    // HVD_ERR_TIMED_OUT (no server in time), HVD_ERR_TRANSPORT (auth failed, protocol error),
    // each with a message naming the address.
    KvClient(const std::string &addr, int port, const std::string &secret, int32_t rank,
             int32_t size, const Deadline &deadline);
    ~KvClient();  // closes the socket without BYE if bye() was not called
    KvClient(const KvClient &) = delete;
    KvClient &operator=(const KvClient &) = delete;

    void put(const std::string &key, const std::string &value);
    // Blocks until the key exists or the deadline passes (HVD_ERR_TIMED_OUT naming the key).
    // A FAILED notice received while waiting throws HVD_ERR_PEER_FAILED naming the rank.
    std::string get(const std::string &key, const Deadline &deadline);
    // Everyone puts then gets: returns values of `key_prefix/<r>` for r in [0,size).
    std::vector<std::string> all_gather(const std::string &key_prefix, const std::string &mine,
                                        const Deadline &deadline);

    // The socket, for the owner's poll/epoll loop: readable means a notice (or EOF) is there.
    int fd() const;
    // Non-blocking: reads whatever notices are pending. Returns the ranks reported failed
    // since the last call; the loss of the server itself (EOF or a socket error: the process
    // hosting it died) is reported as kServerLost and marks the client closed.
    static constexpr int32_t kServerLost = -1;
    std::vector<int32_t> poll_failures();

    // Leaves cleanly. Does not wait for others.
    void bye();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::bootstrap
