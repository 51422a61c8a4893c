// SPDX-License-Identifier: Apache-2.0
// The membership rounds of an elastic job, as pure bookkeeping (no sockets, no clock), so that
// the rules can be unit-tested. A worker is one process hvdrun started, with a stable id; a
// round is one job of ranks 0..size-1 formed from the workers that asked to join it.
//
// Rules:
// - A round forms when every live worker waits to join (each asks after it starts, and again
//   after its round failed or it learnt of added workers), or, with `timed_out`, when none is
//   still a member of the newest round and at least min_np wait (those that never asked are
//   left for a later round).
// - Ranks: the newest round's members first, in their old rank order (so rank 0, whose state
//   elastic.run broadcasts, has trained before), then the others in start order.
// - A worker that exits is gone; the job fails when fewer than min_np workers are live.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvdrun {

class Membership {
  public:
    Membership(int min_np, int max_np) : min_np_(min_np), max_np_(max_np) {}

    void add_worker(int id, const std::string &host);
    void worker_exited(int id);
    // A join request arrived (true), or its connection closed before the round formed.
    void set_waiting(int id, bool waiting);

    int live() const;
    int waiting() const;
    int min_np() const { return min_np_; }
    int max_np() const { return max_np_; }
    bool below_min() const { return live() < min_np_; }
    const std::string &host_of(int id) const;

    // Whether a round should form now (see the rules above).
    bool ready(bool timed_out) const;
    // Forms the next round from the waiting workers: their ids in rank order.
    std::vector<int> form();
    int64_t round() const { return round_; }
    // Whether the newest round is out of date: a live worker is outside it (started later, or
    // late to ask), or one of its members is gone (exited, or its host was removed).
    bool pending() const;

  private:
    struct Worker {
        int id;
        std::string host;
        bool live = true;
        bool waiting = false;
        int64_t round = 0;  // the newest round it is a member of; 0 none
        int rank = -1;      // its rank there
    };
    Worker *find(int id);
    const Worker *find(int id) const;

    int min_np_;
    int max_np_;
    int64_t round_ = 0;
    std::vector<Worker> workers_;  // in start order
};

}  // namespace hvdrun
