// SPDX-License-Identifier: Apache-2.0
#include "transport/ucx/ucx_transport.h"

#include <ucp/api/ucp.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "config/read.h"
#include "transport/ucx/ucx_tls.h"

namespace hvd::transport {

namespace {

// How long abort_all lets cancelled and force-closed operations end before abandoning them.
constexpr int64_t kAbortDrainMs = 200;
// How long closing endpoints may wait for peers' acknowledgements.
constexpr int64_t kCloseWaitMs = 2000;

hvd_status_t status_from_ucs(ucs_status_t s) {
    switch (s) {
        case UCS_OK:
            return HVD_OK;
        case UCS_ERR_NO_MEMORY:
            return HVD_ERR_NO_MEMORY;
        case UCS_ERR_ENDPOINT_TIMEOUT:
        case UCS_ERR_CONNECTION_RESET:
        case UCS_ERR_UNREACHABLE:
        case UCS_ERR_REJECTED:
            return HVD_ERR_PEER_FAILED;
        case UCS_ERR_TIMED_OUT:
            return HVD_ERR_TIMED_OUT;
        case UCS_ERR_CANCELED:
            return HVD_ERR_ABORTED;
        default:
            return HVD_ERR_TRANSPORT;
    }
}

void check_ucs(ucs_status_t s, const char *what, int32_t rank) {
    if (s != UCS_OK)
        throw Error(HVD_ERR_TRANSPORT,
                    strprintf("rank %d: %s failed: %s", rank, what, ucs_status_string(s)));
}

// One operation handed to UCX. UCX's callbacks get the slot, not the caller's Completion, so
// an operation can be abandoned (see abort_all) without UCX ever writing to freed memory.
struct Slot {
    void *owner;    // the UcxTransport
    Completion *c;  // null once abandoned
    int32_t peer;   // -1: receive from any source
    bool is_send;
    void *request;  // UCX request handle, once known
    bool called_back;
};

class UcxTransport final : public Transport {
  public:
    UcxTransport(int32_t rank, int32_t size, bool single_host, const std::string &net_devices)
        : rank_(rank), size_(size) {
        // Between hosts, TCP endpoints connect in the background (unless the user set
        // UCX_TCP_CONN_NB): UCX's blocking connect() would hold ucp_ep_create for the kernel's
        // whole SYN retry time (minutes) toward a host the network drops, past every deadline
        // of init. UCX 1.13 reads this one from the environment only.
        if (!single_host) ::setenv("UCX_TCP_CONN_NB", "y", /*overwrite=*/0);
        // UCX's TCP transport sends and receives in segments of these sizes. Both or neither:
        // the send segment may not exceed the receive one. Also read from the environment
        // only (ucp_config_modify leaves them as they were).
        if (!single_host && std::getenv("UCX_TCP_TX_SEG_SIZE") == nullptr &&
            std::getenv("UCX_TCP_RX_SEG_SIZE") == nullptr) {
            ::setenv("UCX_TCP_RX_SEG_SIZE", kTcpSegSize, /*overwrite=*/0);
            ::setenv("UCX_TCP_TX_SEG_SIZE", kTcpSegSize, /*overwrite=*/0);
        }
        ucp_config_t *config = nullptr;
        check_ucs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read", rank_);
        auto modify = [&](const char *name, const char *value) {
            ucs_status_t m = ucp_config_modify(config, name, value);
            if (m != UCS_OK) ucp_config_release(config);
            check_ucs(m, strprintf("ucp_config_modify(%s)", name).c_str(), rank_);
        };
        const char *user_devices = std::getenv("UCX_NET_DEVICES");
        if (!net_devices.empty() && user_devices == nullptr) {
            modify("NET_DEVICES", net_devices.c_str());
        } else if (!net_devices.empty() && net_devices != user_devices) {
            HVD_LOG(kWarning, rank_, "UCX_NET_DEVICES=%s wins over HVD_IFACE=%s for UCX",
                    user_devices, net_devices.c_str());
        }
        if (single_host && std::getenv("UCX_RNDV_THRESH") == nullptr)
            modify("RNDV_THRESH", kSingleHostRndvThresh);
        same_host_shared_memory_ = tls_allow_shared_memory(configured_tls(config));
        ucp_params_t params{};
        params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
        params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
        params.mt_workers_shared = 0;
        ucs_status_t s = ucp_init(&params, config, &context_);
        ucp_config_release(config);
        check_ucs(s, "ucp_init", rank_);

        ucp_worker_params_t wparams{};
        wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // the engine or a waiter, one at a time
        s = ucp_worker_create(context_, &wparams, &worker_);
        if (s != UCS_OK) {
            ucp_cleanup(context_);
            check_ucs(s, "ucp_worker_create", rank_);
        }
        s = ucp_worker_get_efd(worker_, &efd_);
        if (s != UCS_OK) {
            ucp_worker_destroy(worker_);
            ucp_cleanup(context_);
            check_ucs(s, "ucp_worker_get_efd", rank_);
        }
        ucp_address_t *addr = nullptr;
        size_t addr_len = 0;
        s = ucp_worker_get_address(worker_, &addr, &addr_len);
        if (s != UCS_OK) {
            ucp_worker_destroy(worker_);
            ucp_cleanup(context_);
            check_ucs(s, "ucp_worker_get_address", rank_);
        }
        address_.assign(reinterpret_cast<const char *>(addr), addr_len);
        ucp_worker_release_address(worker_, addr);
        failed_.assign(static_cast<size_t>(size_), false);
    }

    ~UcxTransport() override {
        abort_all(HVD_ERR_ABORTED);
        close_endpoints(/*force=*/false);
        ucp_worker_destroy(worker_);
        ucp_cleanup(context_);
        for (Slot *slot : orphans_)
            delete slot;  // no callback can come after the worker is gone
    }

    int32_t rank() const override { return rank_; }
    int32_t size() const override { return size_; }
    std::string local_address() const override { return address_; }

    void connect(const std::vector<std::string> &addresses,
                 const std::vector<bool> &same_host) override {
        if (static_cast<int32_t>(addresses.size()) != size_)
            throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: %zu addresses for %d ranks", rank_,
                                                    addresses.size(), size_));
        eps_.assign(static_cast<size_t>(size_), nullptr);
        err_args_.resize(static_cast<size_t>(size_));
        // Peers on other hosts are reached over the network (TCP here), whose sends may
        // complete with bytes left in UCX's buffer; shared memory and CMA never do. Peers on
        // this host are too where UCX_TLS leaves UCX no shared memory.
        sends_need_progress_ = false;
        for (int32_t peer = 0; peer < size_; ++peer)
            sends_need_progress_ =
                sends_need_progress_ ||
                (peer != rank_ && (!same_host[peer] || !same_host_shared_memory_));
        for (int32_t peer = 0; peer < size_; ++peer) {
            err_args_[peer] = {this, peer};
            ucp_ep_params_t ep{};
            ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                            UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep.address = reinterpret_cast<const ucp_address_t *>(addresses[peer].data());
            ep.err_mode = error_mode(same_host[peer]);
            ep.err_handler.cb = &UcxTransport::on_ep_error;
            ep.err_handler.arg = &err_args_[peer];
            ucs_status_t s = ucp_ep_create(worker_, &ep, &eps_[peer]);
            if (s != UCS_OK)
                throw PeerUnreachable(
                    peer, ucs_status_string(s),
                    strprintf("rank %d: cannot create a UCX endpoint to rank %d: %s", rank_, peer,
                              ucs_status_string(s)));
        }
    }

    void isend(int32_t peer, uint64_t tag, const void *buf, size_t len, Completion *c) override {
        start(c, peer);
        if (peer < 0 || peer >= size_ || eps_.empty() || failed_[peer] || aborted_) {
            finish(c, aborted_ ? abort_status_ : HVD_ERR_PEER_FAILED);
            return;
        }
        Slot *slot = new Slot{this, c, peer, true, nullptr, false};
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        p.cb.send = &UcxTransport::on_send_done;
        p.user_data = slot;
        c->length = len;
        track(slot, ucp_tag_send_nbx(eps_[peer], buf, len, tag, &p));
    }

    void irecv(uint64_t tag, uint64_t mask, void *buf, size_t len, Completion *c) override {
        int32_t peer = (mask & kTagSourceMask) == kTagSourceMask ? tag_source(tag) : -1;
        start(c, peer);
        if (aborted_ || (peer >= 0 && peer < size_ && failed_[peer])) {
            finish(c, aborted_ ? abort_status_ : HVD_ERR_PEER_FAILED);
            return;
        }
        // No immediate completion: the callback, run from progress(), is the one place that
        // records the received length and sender.
        Slot *slot = new Slot{this, c, peer, false, nullptr, false};
        ucp_request_param_t p{};
        p.op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        p.cb.recv = &UcxTransport::on_recv_done;
        p.user_data = slot;
        track(slot, ucp_tag_recv_nbx(worker_, buf, len, tag, mask, &p));
    }

    bool try_recv_any(uint64_t tag, uint64_t mask, std::string *payload, Completion *c) override {
        if (aborted_) return false;
        ucp_tag_recv_info_t info{};
        ucp_tag_message_h msg = ucp_tag_probe_nb(worker_, tag, mask, /*remove=*/1, &info);
        if (msg == nullptr) return false;
        payload->resize(info.length);
        start(c, tag_source(info.sender_tag));
        c->length = info.length;
        c->sender_tag = info.sender_tag;
        Slot *slot = new Slot{this, c, -1, false, nullptr, false};
        ucp_request_param_t p{};
        p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        p.cb.recv = &UcxTransport::on_recv_done;
        p.user_data = slot;
        track(slot, ucp_tag_msg_recv_nbx(worker_, payload->data(), info.length, msg, &p));
        // The message has arrived already (at least its header); finish receiving it here so
        // callers get whole messages. Bounded: a peer that dies mid-message fails the request.
        Deadline limit = Deadline::after_ms(30000);
        while (!c->done && !limit.expired())
            progress();
        if (!c->done) {
            abort_all(HVD_ERR_TIMED_OUT);
            finish(c, HVD_ERR_TIMED_OUT);
        }
        return true;
    }

    bool progress() override {
        bool any = false;
        while (ucp_worker_progress(worker_) != 0)
            any = true;
        // Endpoint errors are only recorded inside callbacks (UCX forbids re-entering
        // progress there); act on them now.
        while (!ep_errors_.empty()) {
            int32_t peer = ep_errors_.back();
            ep_errors_.pop_back();
            mark_peer_failed(peer);
            any = true;
        }
        return any;
    }

    bool sends_need_progress() const override { return sends_need_progress_; }

    int event_fd() const override { return efd_; }

    bool arm() override {
        ucs_status_t s = ucp_worker_arm(worker_);
        return s == UCS_OK;  // UCS_ERR_BUSY: events pending, progress instead of sleeping
    }

    void mark_peer_failed(int32_t peer) override {
        if (peer < 0 || peer >= size_ || failed_[peer]) return;
        failed_[peer] = true;
        newly_failed_.push_back(peer);
        // Receives waiting for this peer would never match: cancel them. Sends to it are
        // failed by UCX when the endpoint is closed.
        std::vector<void *> to_cancel;
        for (auto &kv : in_flight_)
            if (kv.second->peer == peer) {
                override_status_[kv.first] = HVD_ERR_PEER_FAILED;
                if (!kv.second->is_send) to_cancel.push_back(kv.second->request);
            }
        for (void *req : to_cancel)
            ucp_request_cancel(worker_, req);
        if (!eps_.empty() && eps_[peer] != nullptr) {
            close_endpoint(peer, /*force=*/true);
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
        }
        if (in_flight_.empty()) return;
        for (auto &kv : in_flight_)
            override_status_[kv.first] = status;
        std::vector<void *> recvs;
        for (auto &kv : in_flight_)
            if (!kv.second->is_send) recvs.push_back(kv.second->request);
        for (void *req : recvs)
            ucp_request_cancel(worker_, req);
        // Sends end when their endpoint goes: force-close every endpoint.
        close_endpoints(/*force=*/true);
        Deadline limit = Deadline::after_ms(kAbortDrainMs);
        while (!in_flight_.empty() && !limit.expired())
            progress();
        // What is left waits on a peer that will never answer (a rendezvous send to a dead
        // same-host process, whose endpoint has no error handling): abandon it. UCX will not
        // touch the caller's buffer again (the peer that would read it is gone) and any late
        // callback finds an orphaned slot.
        for (auto &kv : in_flight_) {
            Slot *slot = kv.second;
            finish(slot->c, status);
            slot->c = nullptr;
            orphans_.push_back(slot);
        }
        in_flight_.clear();
        override_status_.clear();
    }

  private:
    // UCX 1.13 has no shared-memory or CMA transport that supports error-handling mode PEER:
    // asking for it between ranks of one host silently moves all traffic to loopback TCP
    // (measured several times slower for 4 MiB messages). Same-host peers therefore
    // use mode NONE, and their death is detected by the rendezvous connection instead (see
    // engine/failure_monitor.h), which sees a dead process within milliseconds.
    // HVD_UCX_ERR_MODE=peer forces PEER for every endpoint.
    static ucp_err_handling_mode_t error_mode(bool same_host) {
        static const bool force_peer = [] {
            const char *v = config::get_string(config::Setting::kUcxErrMode);
            return v != nullptr && std::strcmp(v, "peer") == 0;
        }();
        return same_host && !force_peer ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
    }

    struct ErrArg {
        UcxTransport *self;
        int32_t peer;
    };

    // c->internal points back at the transport while the operation is in flight, so the
    // UCX callbacks (which only get user_data = c) can reach it.
    void start(Completion *c, int32_t peer) { c->start(peer); }
    static void finish(Completion *c, hvd_status_t status) { c->finish(status); }

    void track(Slot *slot, ucs_status_ptr_t r) {
        Completion *c = slot->c;
        if (r == nullptr) {
            finish(c, HVD_OK);
            delete slot;
        } else if (UCS_PTR_IS_ERR(r)) {
            finish(c, status_from_ucs(UCS_PTR_STATUS(r)));
            delete slot;
        } else if (slot->called_back) {
            delete slot;  // a callback that ran inside the call completed c and freed r
        } else {
            slot->request = r;
            c->internal = slot;
            in_flight_[c] = slot;
        }
    }

    void complete(void *request, ucs_status_t status, Slot *slot) {
        slot->called_back = true;
        Completion *c = slot->c;
        ucp_request_free(request);
        if (c == nullptr) return;  // abandoned by abort_all; the slot stays in orphans_
        hvd_status_t st = status_from_ucs(status);
        auto ov = override_status_.find(c);
        if (ov != override_status_.end()) {
            if (status != UCS_OK) st = ov->second;
            override_status_.erase(ov);
        }
        bool tracked = in_flight_.erase(c) != 0;
        finish(c, st);
        if (tracked) delete slot;
    }

    static UcxTransport *self_of(Slot *slot) { return static_cast<UcxTransport *>(slot->owner); }

    static void on_send_done(void *request, ucs_status_t status, void *user_data) {
        auto *slot = static_cast<Slot *>(user_data);
        self_of(slot)->complete(request, status, slot);
    }

    static void on_recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                             void *user_data) {
        auto *slot = static_cast<Slot *>(user_data);
        if (slot->c != nullptr && status == UCS_OK && info != nullptr) {
            slot->c->length = info->length;
            slot->c->sender_tag = info->sender_tag;
            slot->c->peer = tag_source(info->sender_tag);
        }
        self_of(slot)->complete(request, status, slot);
    }

    static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
        auto *ea = static_cast<ErrArg *>(arg);
        HVD_LOG(kWarning, ea->self->rank_, "UCX reports rank %d unreachable: %s", ea->peer,
                ucs_status_string(status));
        ea->self->ep_errors_.push_back(ea->peer);
    }

    void close_endpoint(int32_t peer, bool force) {
        std::vector<int32_t> one{peer};
        close_endpoints(one, force);
    }

    void close_endpoints(bool force) {
        std::vector<int32_t> open;
        for (int32_t peer = 0; peer < static_cast<int32_t>(eps_.size()); ++peer)
            if (eps_[peer] != nullptr) open.push_back(peer);
        close_endpoints(open, force);
    }

    // Closes the endpoints together, so peers' acknowledgements overlap. A flush close waits
    // for the peer, so it is bounded: what has not finished by then is released with the
    // worker (ucp_request_free lets UCX drop a request whenever it ends).
    void close_endpoints(const std::vector<int32_t> &peers, bool force) {
        std::vector<void *> closing;
        for (int32_t peer : peers) {
            ucp_ep_h ep = eps_[peer];
            eps_[peer] = nullptr;
            if (ep == nullptr) continue;
            ucp_request_param_t p{};
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
            ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
            if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
        }
        Deadline limit = Deadline::after_ms(kCloseWaitMs);
        auto pending = [&] {
            for (void *r : closing)
                if (ucp_request_check_status(r) == UCS_INPROGRESS) return true;
            return false;
        };
        while (pending() && !limit.expired())
            progress();
        for (void *r : closing)
            ucp_request_free(r);
    }

    int32_t rank_;
    int32_t size_;
    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    int efd_ = -1;
    std::string address_;
    std::vector<ucp_ep_h> eps_;
    std::vector<ErrArg> err_args_;
    std::vector<bool> failed_;
    std::vector<int32_t> newly_failed_;
    std::vector<int32_t> ep_errors_;  // peers reported by UCX error callbacks, not yet handled
    std::unordered_map<Completion *, Slot *> in_flight_;
    std::vector<Slot *> orphans_;  // abandoned by abort_all; freed with the worker
    std::unordered_map<Completion *, hvd_status_t> override_status_;
    bool same_host_shared_memory_ = true;  // UCX_TLS lets UCX use shared memory on this host
    bool sends_need_progress_ = false;     // some peer is reached over the network
    bool aborted_ = false;
    hvd_status_t abort_status_ = HVD_ERR_ABORTED;
};

}  // namespace

std::unique_ptr<Transport> make_ucx_transport(int32_t rank, int32_t size, bool single_host,
                                              const std::string &net_devices) {
    return std::make_unique<UcxTransport>(rank, size, single_host, net_devices);
}

void connect_local_transports(const std::vector<Transport *> &transports) {
    std::vector<std::string> addresses;
    for (Transport *t : transports)
        addresses.push_back(t->local_address());
    std::vector<bool> same_host(transports.size(), true);
    for (Transport *t : transports)
        t->connect(addresses, same_host);
}

}  // namespace hvd::transport
