// SPDX-License-Identifier: Apache-2.0
#include "transport/loopback/loopback_transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "common/error.h"

namespace hvd::transport {

namespace {

bool tag_matches(uint64_t msg_tag, uint64_t tag, uint64_t mask) {
    return (msg_tag & mask) == (tag & mask);
}

}  // namespace

// What one rank receives from the others, handed over under mu.
struct LoopbackMailbox {
    struct Message {
        int32_t source;
        uint64_t tag;
        std::string data;
    };

    std::mutex mu;
    std::vector<Message> arrived;  // in arrival order, not yet taken by the owner's progress()
    std::vector<int32_t> deaths;   // ranks that aborted, not yet taken by progress()
    bool dead = false;             // the owner aborted: it refuses messages
    bool made = false;             // its transport exists (or existed)
    int efd = -1;                  // counts arrivals; drained by the owner's arm()

    // Called with mu held.
    void signal() const { ::eventfd_write(efd, 1); }
};

struct LoopbackState {
    std::vector<std::unique_ptr<LoopbackMailbox>> boxes;  // index = rank

    ~LoopbackState() {
        for (auto &box : boxes)
            if (box->efd >= 0) ::close(box->efd);
    }
};

namespace {

using Message = LoopbackMailbox::Message;

class LoopbackTransport final : public Transport {
  public:
    LoopbackTransport(std::shared_ptr<LoopbackState> state, int32_t rank)
        : state_(std::move(state)),
          box_(*state_->boxes[rank]),
          rank_(rank),
          failed_(state_->boxes.size(), false) {}

    ~LoopbackTransport() override { abort_all(HVD_ERR_ABORTED); }

    int32_t rank() const override { return rank_; }
    int32_t size() const override { return static_cast<int32_t>(state_->boxes.size()); }
    std::string local_address() const override { return address_of(rank_); }

    void connect(const std::vector<std::string> &addresses, const std::vector<bool> &) override {
        if (static_cast<int32_t>(addresses.size()) != size())
            throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: %zu addresses for %d ranks", rank_,
                                                    addresses.size(), size()));
        for (int32_t r = 0; r < size(); ++r)
            if (addresses[r] != address_of(r))
                throw Error(HVD_ERR_TRANSPORT,
                            strprintf("rank %d: rank %d's address is not this hub's (%s)", rank_, r,
                                      address_of(r).c_str()));
    }

    void isend(int32_t peer, uint64_t tag, const void *buf, size_t len, Completion *c) override {
        start(c, peer);
        if (aborted_) return finish(c, abort_status_);
        if (peer < 0 || peer >= size() || failed_[peer]) return finish(c, HVD_ERR_PEER_FAILED);
        Message m{rank_, tag, len > 0 ? std::string(static_cast<const char *>(buf), len) : ""};
        LoopbackMailbox &to = *state_->boxes[peer];
        {
            std::lock_guard<std::mutex> lock(to.mu);
            if (to.dead) return finish(c, HVD_ERR_PEER_FAILED);
            to.arrived.push_back(std::move(m));
            to.signal();
        }
        c->length = len;
        finish(c, HVD_OK);
    }

    void irecv(uint64_t tag, uint64_t mask, void *buf, size_t len, Completion *c) override {
        int32_t peer = (mask & kTagSourceMask) == kTagSourceMask ? tag_source(tag) : -1;
        start(c, peer);
        if (aborted_) return finish(c, abort_status_);
        if (peer >= 0 && peer < size() && failed_[peer]) return finish(c, HVD_ERR_PEER_FAILED);
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
            if (tag_matches(it->tag, tag, mask)) {
                deliver(*it, buf, len, c);
                unexpected_.erase(it);
                return;
            }
        }
        posted_.push_back(Posted{tag, mask, buf, len, peer, c});
    }

    bool try_recv_any(uint64_t tag, uint64_t mask, std::string *payload, Completion *c) override {
        if (aborted_) return false;
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
            if (!tag_matches(it->tag, tag, mask)) continue;
            start(c, it->source);
            c->length = it->data.size();
            c->sender_tag = it->tag;
            *payload = std::move(it->data);
            unexpected_.erase(it);
            finish(c, HVD_OK);
            return true;
        }
        return false;
    }

    bool progress() override {
        if (aborted_) return false;
        std::vector<Message> arrived;
        std::vector<int32_t> deaths;
        {
            std::lock_guard<std::mutex> lock(box_.mu);
            arrived.swap(box_.arrived);
            deaths.swap(box_.deaths);
        }
        // Messages first: a rank's messages were all queued before its death notice.
        for (Message &m : arrived) {
            bool matched = false;
            for (auto it = posted_.begin(); it != posted_.end(); ++it) {
                if (tag_matches(m.tag, it->tag, it->mask)) {
                    deliver(m, it->buf, it->len, it->c);
                    posted_.erase(it);
                    matched = true;
                    break;
                }
            }
            if (!matched) unexpected_.push_back(std::move(m));
        }
        for (int32_t peer : deaths)
            mark_peer_failed(peer);
        return !arrived.empty() || !deaths.empty();
    }

    int event_fd() const override { return box_.efd; }

    bool arm() override {
        std::lock_guard<std::mutex> lock(box_.mu);
        eventfd_t ignored;
        ::eventfd_read(box_.efd, &ignored);  // nonblocking: fails when already zero
        // Senders queue and signal under the lock, so anything queued after this check
        // makes the fd readable again.
        return box_.arrived.empty() && box_.deaths.empty();
    }

    void mark_peer_failed(int32_t peer) override {
        if (peer < 0 || peer >= size() || failed_[peer]) return;
        failed_[peer] = true;
        newly_failed_.push_back(peer);
        for (auto it = posted_.begin(); it != posted_.end();) {
            if (it->peer == peer) {
                finish(it->c, HVD_ERR_PEER_FAILED);
                it = posted_.erase(it);
            } else {
                ++it;
            }
        }
    }

    std::vector<int32_t> take_failed_peers() override {
        std::vector<int32_t> out;
        out.swap(newly_failed_);
        return out;
    }

    void abort_all(hvd_status_t status) override {
        if (!aborted_) {
            aborted_ = true;
            abort_status_ = status;
            {
                std::lock_guard<std::mutex> lock(box_.mu);
                box_.dead = true;
                box_.arrived.clear();
                box_.deaths.clear();
            }
            // One mailbox lock at a time: no lock order to keep.
            for (int32_t r = 0; r < size(); ++r) {
                if (r == rank_) continue;
                LoopbackMailbox &other = *state_->boxes[r];
                std::lock_guard<std::mutex> lock(other.mu);
                if (other.dead) continue;
                other.deaths.push_back(rank_);
                other.signal();
            }
        }
        for (Posted &p : posted_)
            finish(p.c, status);
        posted_.clear();
        unexpected_.clear();
    }

  private:
    struct Posted {
        uint64_t tag;
        uint64_t mask;
        void *buf;
        size_t len;
        int32_t peer;  // the source it names, -1: any
        Completion *c;
    };

    static std::string address_of(int32_t rank) { return "loopback:" + std::to_string(rank); }

    static void start(Completion *c, int32_t peer) { c->start(peer); }
    static void finish(Completion *c, hvd_status_t status) { c->finish(status); }

    // Completes a receive with m; a message longer than the buffer is lost (as with UCX).
    static void deliver(const Message &m, void *buf, size_t len, Completion *c) {
        if (m.data.size() > len) return finish(c, HVD_ERR_TRANSPORT);
        if (!m.data.empty()) std::memcpy(buf, m.data.data(), m.data.size());
        c->length = m.data.size();
        c->sender_tag = m.tag;
        c->peer = m.source;
        finish(c, HVD_OK);
    }

    std::shared_ptr<LoopbackState> state_;
    LoopbackMailbox &box_;
    int32_t rank_;
    std::vector<bool> failed_;
    std::vector<int32_t> newly_failed_;
    std::deque<Posted> posted_;       // receives in the order posted
    std::deque<Message> unexpected_;  // arrived, unmatched, in arrival order
    bool aborted_ = false;
    hvd_status_t abort_status_ = HVD_ERR_ABORTED;
};

}  // namespace

LoopbackHub::LoopbackHub(int32_t size) : state_(std::make_shared<LoopbackState>()) {
    if (size < 1 || size > kMaxRanks)
        throw Error(HVD_ERR_INVALID_ARG, strprintf("loopback hub: %d ranks", size));
    for (int32_t r = 0; r < size; ++r) {
        state_->boxes.push_back(std::make_unique<LoopbackMailbox>());
        state_->boxes.back()->efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (state_->boxes.back()->efd < 0)
            throw Error(HVD_ERR_TRANSPORT, strprintf("loopback hub: eventfd for rank %d: %s", r,
                                                     std::strerror(errno)));
    }
}

LoopbackHub::~LoopbackHub() = default;

int32_t LoopbackHub::size() const {
    return static_cast<int32_t>(state_->boxes.size());
}

std::unique_ptr<Transport> LoopbackHub::make(int32_t rank) {
    if (rank < 0 || rank >= size())
        throw Error(HVD_ERR_INVALID_ARG,
                    strprintf("loopback hub: rank %d of %d ranks", rank, size()));
    LoopbackMailbox &box = *state_->boxes[rank];
    {
        std::lock_guard<std::mutex> lock(box.mu);
        if (box.made)
            throw Error(HVD_ERR_INVALID_ARG,
                        strprintf("loopback hub: rank %d's transport exists already", rank));
        box.made = true;
    }
    return std::make_unique<LoopbackTransport>(state_, rank);
}

std::vector<std::unique_ptr<Transport>> LoopbackHub::make_all() {
    std::vector<std::unique_ptr<Transport>> out;
    for (int32_t r = 0; r < size(); ++r)
        out.push_back(make(r));
    return out;
}

}  // namespace hvd::transport
