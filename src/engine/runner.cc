// SPDX-License-Identifier: Apache-2.0
#include "engine/runner.h"

#include <exception>
#include <new>
#include <utility>

#include "common/error.h"
#include "engine/executor.h"
#include "engine/gpu_runner.h"
#include "engine/op_math.h"
#include "engine/set_shared_memory.h"
#include "engine/staged_allreduce.h"
#include "negotiation/fusion_planner.h"

namespace hvd::engine {

Runner::Runner(const RunnerParts &parts) : p_(parts) {}

// Defined here, where GpuRunner is complete.
Runner::~Runner() = default;

bool Runner::run(util::Fifo<Response> &responses) {
    bool any = false;
    while (!responses.empty() && !p_.abort->aborted()) {
        any = true;
        // Run where it lies: popped only once run, so that its slot (with its strings) is
        // reused by the next push.
        Response &resp = responses.front();
        RequestPtr req = request_for(resp);
        if (!req) {  // joined and not taking part, or its set destroyed since
            responses.pop_front();
            continue;
        }
        if (p_.tuner->searching() && resp.status == HVD_OK)
            p_.tuner->record(negotiation::response_bytes(resp));
        if (resp.fuse_next && resp.status == HVD_OK) {
            run_fused(responses, std::move(req));
            continue;
        }
        try {
            run_one(resp, req);
        } catch (...) {
            responses.pop_front();
            finish_thrown(&req, 1);
            throw;
        }
        responses.pop_front();
    }
    return any;
}

RequestPtr Runner::request_for(Response &resp) {
    if (RequestPtr req = take_request(resp)) return req;
    // Its set was destroyed since this rank reported the op: the destroy finished the request
    // already (on every member, at the same point of the order), so there is nothing to run.
    if (!p_.sets->find(resp.set_id)) return nullptr;
    const Request *join = p_.pending->join_in(resp.set_id);
    if (join == nullptr)
        throw Error(HVD_ERR_INTERNAL,
                    strprintf("rank %d: the coordinator scheduled '%s' (process set %u), which "
                              "this rank never enqueued",
                              p_.rank, resp.name.c_str(), resp.set_id));
    // This rank joined: it takes part in the others' allreduces with zeros (a fused run as
    // a whole, as the other ranks run it) and ignores errors meant for the ranks that
    // enqueued the op.
    if (resp.status != HVD_OK || resp.type != OpType::kAllreduce) return nullptr;
    return zeros_like(resp, *join);
}

RequestPtr Runner::take_request(Response &resp) {
    // Every response comes with this rank's request, if it had one pending when the response
    // was queued. One no longer pending (its set was destroyed since) is none.
    RequestPtr mine = std::move(resp.request);
    return mine != nullptr && p_.pending->holds(*mine) ? p_.pending->take(*mine) : nullptr;
}

// A request taken out of the pending ops is no longer failed when the context aborts: if
// running it throws (the pass then aborts the context), it is finished here with what was
// thrown, so that nobody waits on it until its op timeout. Call from a catch block.
void Runner::finish_thrown(const RequestPtr *reqs, size_t n) {
    std::string message;
    hvd_status_t s = thrown_status(p_.rank, &message);
    p_.intake->finish_all(reqs, n, s, message);
}

hvd_status_t thrown_status(int32_t rank, std::string *message) {
    try {
        throw;
    } catch (const Error &e) {
        *message = e.what();
        return e.status();
    } catch (const std::exception &e) {
        *message = strprintf("rank %d: engine: %s", rank, e.what());
    } catch (...) {
        *message = strprintf("rank %d: engine: unknown exception", rank);
    }
    return HVD_ERR_INTERNAL;
}

// The whole run arrived in one message, so it is all in the queue now, from the front.
void Runner::run_fused(util::Fifo<Response> &responses, RequestPtr first_req) {
    // A member vector, cleared but kept: no allocation per run.
    std::vector<RequestPtr> &reqs = fused_reqs_;
    reqs.clear();
    size_t taken = 1;  // responses[0, taken) are in the run
    try {
        reqs.push_back(std::move(first_req));
        while (responses[taken - 1].fuse_next) {
            if (taken == responses.size())
                throw Error(HVD_ERR_INTERNAL,
                            strprintf("rank %d: a fused run after '%s' arrived incomplete", p_.rank,
                                      responses[taken - 1].name.c_str()));
            Response &next = responses[taken++];
            if (p_.tuner->searching()) p_.tuner->record(negotiation::response_bytes(next));
            RequestPtr req = request_for(next);
            if (!req)
                throw Error(HVD_ERR_INTERNAL,
                            strprintf("rank %d: '%s' of a fused run is not an allreduce that "
                                      "succeeded",
                                      p_.rank, next.name.c_str()));
            reqs.push_back(std::move(req));
        }
        run_fused_taken(&responses.front(), reqs);
    } catch (...) {
        if (reqs.empty())
            finish_thrown(&first_req, 1);
        else
            finish_thrown(reqs.data(), reqs.size());
        reqs.clear();
        responses.pop_front(taken);
        throw;
    }
    reqs.clear();
    responses.pop_front(taken);
}

void Runner::run_fused_taken(const Response *resps, const std::vector<RequestPtr> &reqs) {
    collectives::Comm comm = make_comm(resps[0], *reqs.front());
    for (const RequestPtr &r : reqs)
        comm.deadline = Deadline::earlier(comm.deadline, r->deadline);
    std::string message;
    for (const RequestPtr &r : reqs)
        trace_start_op(*r);
    std::vector<RequestPtr> traced;
    for (const RequestPtr &r : reqs)
        if (r->traced) traced.push_back(r);
    ActivityTrace trace(p_.timeline, traced);
    hvd_status_t s = HVD_ERR_INTERNAL;
    try {
        if (on_device(*reqs.front()))
            s = gpu_runner().run(comm, resps, reqs, &fusion_buffer_, trace, &message);
        else if (runs_staged_allreduce(resps[0]))
            s = run_joined_staged(comm, reqs, &message);
        else
            s = execute_fused(comm, resps, reqs, &fusion_buffer_, trace, &message);
    } catch (const std::bad_alloc &) {
        s = HVD_ERR_NO_MEMORY;
        message = strprintf("rank %d: out of memory running a fused %s", p_.rank,
                            op_type_name(resps[0].type));
    }
    for (const RequestPtr &r : reqs)
        trace_end_op(*r);
    fused_collectives_.fetch_add(1, std::memory_order_relaxed);
    fused_tensors_.fetch_add(reqs.size(), std::memory_order_relaxed);
    if (s != HVD_OK) s = settle_failure(resps[0], s, &message);
    p_.intake->finish_all(reqs.data(), reqs.size(), s, message);
}

void Runner::trace_start_op(Request &req) {
    if (!req.traced || !p_.timeline->active()) return;
    p_.timeline->end(req.meta.name);  // NEGOTIATE_<OP>
    p_.timeline->begin(req.meta.name, upper_op_name(req.meta.type));
}

void Runner::trace_end_op(const Request &req) {
    if (req.traced && p_.timeline->active()) p_.timeline->end(req.meta.name);
}

void Runner::run_one(const Response &resp, const RequestPtr &req) {
    trace_start_op(*req);
    bool moves_data = true;
    switch (resp.type) {
        case OpType::kBarrier:
            moves_data = false;
            break;
        case OpType::kJoin:
            if (resp.status == HVD_OK) req->value = resp.first_dims.at(0);
            moves_data = false;
            break;
        case OpType::kProcessSetCreate:
        case OpType::kProcessSetDestroy:
            if (resp.status == HVD_OK) {
                std::string message;
                hvd_status_t s = run_membership_change(resp, *req, &message);
                if (s != HVD_OK) {
                    trace_end_op(*req);
                    p_.intake->finish(req, settle_failure(resp, s, &message), message);
                    return;
                }
            }
            moves_data = false;
            break;
        default:
            break;
    }
    if (resp.status != HVD_OK || !moves_data) {
        trace_end_op(*req);
        p_.intake->finish(req, static_cast<hvd_status_t>(resp.status), resp.message);
        return;
    }
    collectives::Comm comm = make_comm(resp, *req);
    std::string message;
    std::vector<RequestPtr> one{req};
    ActivityTrace trace(req->traced ? p_.timeline : nullptr, one);
    hvd_status_t s;
    if (on_device(*req)) {
        s = gpu_runner().run(comm, &resp, one, &fusion_buffer_, trace, &message);
    } else if (runs_staged_allreduce(resp)) {
        s = run_joined_staged(comm, one, &message);
    } else {
        trace.begin(transfer_activity(comm, resp.type));
        s = execute_response(comm, resp, *req, &message);
        trace.end();
    }
    trace_end_op(*req);
    if (s != HVD_OK) s = settle_failure(resp, s, &message);
    p_.intake->finish(req, s, message);
}

collectives::Comm Runner::make_comm(const Response &resp, const Request &req) {
    ProcessSetPtr set = p_.sets->find(resp.set_id);
    if (!set || set->my_index < 0)
        throw Error(HVD_ERR_INTERNAL, strprintf("rank %d: '%s' runs in process set %u, which "
                                                "this rank does not know",
                                                p_.rank, resp.name.c_str(), resp.set_id));
    collectives::Comm comm;
    comm.transport = p_.transport;
    comm.members = set->members;
    comm.my_index = set->my_index;
    comm.set_id = resp.set_id;
    comm.seq = resp.seq;
    comm.deadline = req.deadline;
    comm.abort_status = p_.abort->flag();
    comm.scratch = &scratch_;
    // Every rank is a member (in rank order): the shared-memory group's rounds stay in step.
    if (shm_ != nullptr && set->size() == p_.size) {
        comm.shm = shm_;
    } else if (hierarchy_ != nullptr && set->size() == p_.size) {
        // Rank 0's switch for the op's type, the same on every rank (Response::hierarchical).
        if (resp.hierarchical) comm.hierarchy = hierarchy_;
    } else if (!set_groups_.empty()) {
        auto g = set_groups_.find(resp.set_id);
        if (g != set_groups_.end()) comm.shm = g->second.get();
    }
    return comm;
}

hvd_status_t Runner::settle_failure(const Response &resp, hvd_status_t s, std::string *message) {
    if (s == HVD_ERR_MISMATCH || s == HVD_ERR_INVALID_ARG || s == HVD_ERR_UNSUPPORTED) return s;
    // A collective that failed half way leaves the ranks out of step: the context cannot go
    // on.
    if (s == HVD_ERR_TIMED_OUT)
        *message = strprintf("rank %d: %s '%s' timed out", p_.rank, op_type_name(resp.type),
                             resp.name.c_str());
    if (s == HVD_ERR_TRANSPORT) p_.watchdog->await_failure_report();
    p_.abort->set(s, *message);
    transport_aborted_ = true;  // wait_all aborted the transport already
    *message = p_.abort->detail();
    return p_.abort->status();  // a dead peer, when that is the cause
}

void Runner::abort_device_work() {
    if (gpu_) gpu_->abort_communicators();
}

void Runner::check_device_work() {
    if (!gpu_ || !gpu_->watching()) return;
    // Passes come every few microseconds while a caller drives: a look per millisecond does.
    const auto now = std::chrono::steady_clock::now();
    if (now < next_device_check_) return;
    next_device_check_ = now + std::chrono::milliseconds(1);
    std::string message;
    hvd_status_t s = gpu_->check_watched(&message);
    if (s != HVD_OK) p_.abort->set(s, message);
}

bool Runner::watching_device_work() const {
    return gpu_ && gpu_->watching();
}

bool Runner::on_device(const Request &req) {
    return req.input.device_type == HVD_DEVICE_CUDA;
}

GpuRunner &Runner::gpu_runner() {
    if (!gpu_) {
        std::string problem;
        const gpu::GpuLibrary *lib = gpu::gpu_library(&problem);
        // A CUDA tensor passed the enqueue checks only with the module loaded.
        if (lib == nullptr)
            throw Error(HVD_ERR_INTERNAL,
                        strprintf("rank %d: a CUDA tensor runs without the GPU module: %s", p_.rank,
                                  problem.c_str()));
        gpu_ = std::make_unique<GpuRunner>(lib, p_.rank);
    }
    return *gpu_;
}

bool Runner::on_one_host(const std::vector<int32_t> &members) const {
    if (hosts_.empty()) return false;
    for (int32_t r : members)
        if (static_cast<size_t>(r) >= hosts_.size() || hosts_[r] != hosts_[members[0]])
            return false;
    return true;
}

RequestPtr Runner::zeros_like(const Response &resp, const Request &join) {
    auto req = make_request();
    req->meta.name = resp.name;
    req->meta.set_id = resp.set_id;
    req->meta.type = OpType::kAllreduce;
    req->meta.dtype = resp.dtype;
    req->meta.shape = resp.shape;
    req->meta.reduce_op = resp.reduce_op;
    req->meta.prescale = resp.prescale;
    req->meta.postscale = resp.postscale;
    req->input.dtype = resp.dtype;
    req->input.shape = resp.shape;
    // A staged allreduce takes its zeros one chunk at a time (run_joined_staged).
    if (!runs_staged_allreduce(resp)) req->owned_data.resize_zeroed(req->input.bytes());
    req->input.data = req->owned_data.data();
    req->output = req->input;
    req->deadline = join.deadline;
    return req;
}

hvd_status_t Runner::run_joined_staged(collectives::Comm &comm, const std::vector<RequestPtr> &reqs,
                                       std::string *message) {
    const Request &first = *reqs.front();
    size_t bytes = 0;
    for (const RequestPtr &r : reqs)
        bytes += r->input.bytes();
    try {
        return allreduce_staged_zeros(comm, bytes, first.input.dtype, reduction_of(first),
                                      first.meta.prescale, postscale_of(first, comm.size()),
                                      &fusion_buffer_, message);
    } catch (const Error &e) {
        *message = e.what();
        return e.status();
    }
}

hvd_status_t Runner::run_membership_change(const Response &resp, Request &req,
                                           std::string *message) {
    if (resp.type == OpType::kProcessSetCreate) {
        uint16_t id = static_cast<uint16_t>(resp.first_dims.at(0));
        p_.sets->add(id, req.meta.splits, p_.rank);
        req.value = id;
        // A set on one host gets shared memory of its own, unless it is the whole single-host
        // job (whose group it uses). Every member runs this at the same point of the order;
        // the others go on.
        ProcessSetPtr set = p_.sets->find(id);
        if (!set || set->my_index < 0 || set->size() < 2 ||
            (shm_ != nullptr && set->size() == p_.size) || !on_one_host(set->members))
            return HVD_OK;
        Response view = resp;  // the new set's first collectives, on the create op's tag
        view.set_id = id;
        collectives::Comm comm = make_comm(view, req);
        std::unique_ptr<shm::Group> group;
        hvd_status_t s = set_up_set_shared_memory(comm, shm_wanted_, &group);
        if (s != HVD_OK) {
            *message = strprintf("rank %d: setting up shared memory for process set %u failed: %s",
                                 p_.rank, id, status_message(s));
            return s;
        }
        if (group) {
            group->set_spin_policy(p_.transport->spin_policy());  // as the job's group waits
            set_groups_[id] = std::move(group);
        }
        return HVD_OK;
    }
    uint16_t id = static_cast<uint16_t>(req.meta.root);
    p_.sets->remove(id);
    set_groups_.erase(id);
    if (gpu_) gpu_->forget_set(id);
    // Ops this rank queued on the set can never run now.
    std::vector<Request *> doomed;
    for (const RequestPtr &r : p_.pending->all())
        if (r->meta.set_id == id) doomed.push_back(r.get());
    for (Request *r : doomed)
        p_.intake->finish(p_.pending->take(*r), HVD_ERR_INVALID_ARG,
                          strprintf("rank %d: process set %u was destroyed before '%s' ran",
                                    p_.rank, id, r->meta.name.c_str()));
    return HVD_OK;
}

}  // namespace hvd::engine
