// SPDX-License-Identifier: Apache-2.0
// Unit tests of hvdrun's elastic mode: the membership protocol's messages and their MACs
// (bootstrap/elastic_protocol.h, shared with libhvd), the rules by which membership rounds
// form (membership.h), the discovery script's runs, the elastic options, the failed hosts'
// cooldowns (host_blacklist.h), and the line protocol
// of --elastic-controller (controller_protocol.h). The whole job is tested end to end by
// tests/python/elastic, and under a controller by tests/python/ray/test_elastic.py.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

// cmocka 1.1.5's header has no extern "C" guard of its own.
extern "C" {
#include <cmocka.h>
}

#include <poll.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/elastic_protocol.h"
#include "controller_protocol.h"
#include "host_blacklist.h"
#include "host_discovery.h"
#include "membership.h"
#include "options.h"

namespace el = hvd::bootstrap::elastic;

namespace {

const std::string kSecret(64, 'a');
const std::string kServerNonce = "0123456789abcdef0123456789abcdef";
const std::string kClientNonce = "fedcba9876543210fedcba9876543210";

void test_greeting(void **) {
    std::string nonce;
    assert_true(el::parse_greeting(el::greeting_line(kServerNonce), &nonce));
    assert_string_equal(nonce.c_str(), kServerNonce.c_str());
    assert_false(el::parse_greeting("hvd-elastic 2 " + kServerNonce + "\n", &nonce));
    assert_false(el::parse_greeting("hvd-elastic 1 xyz\n", &nonce));
}

void test_request_round_trip(void **) {
    el::Request in{el::RequestKind::kStatus, 7, 3};
    std::string line = el::request_line(kSecret, kServerNonce, kClientNonce, in);
    el::Request out;
    std::string cnonce, err;
    assert_true(el::parse_request(kSecret, kServerNonce, line, &out, &cnonce, &err));
    assert_true(out.kind == el::RequestKind::kStatus);
    assert_int_equal(out.worker_id, 7);
    assert_int_equal(out.round, 3);
    assert_string_equal(cnonce.c_str(), kClientNonce.c_str());
}

void test_request_authentication(void **) {
    el::Request in{el::RequestKind::kJoin, 2, 0};
    std::string line = el::request_line(kSecret, kServerNonce, kClientNonce, in);
    el::Request out;
    std::string cnonce, err;
    // Another secret, another server nonce (a replay), or a changed field all fail.
    assert_false(el::parse_request(std::string(64, 'b'), kServerNonce, line, &out, &cnonce, &err));
    assert_string_equal(err.c_str(), "authentication failed");
    assert_false(el::parse_request(kSecret, kClientNonce, line, &out, &cnonce, &err));
    std::string forged = line;
    forged.replace(0, 6, "join 3");
    assert_false(el::parse_request(kSecret, kServerNonce, forged, &out, &cnonce, &err));
    assert_string_equal(err.c_str(), "authentication failed");
    assert_false(el::parse_request(kSecret, kServerNonce, "join 2 0\n", &out, &cnonce, &err));
    assert_string_equal(err.c_str(), "malformed request");
}

void test_reply_and_assignment(void **) {
    el::Assignment a{4, 1, 3, "host-a", 12345};
    std::string line = el::reply_line(kSecret, kClientNonce, kServerNonce, el::assignment_body(a));
    std::string body, err;
    assert_true(el::parse_reply(kSecret, kClientNonce, kServerNonce, line, &body, &err));
    el::Assignment b;
    assert_true(el::parse_assignment(body, &b, &err));
    assert_int_equal(b.round, 4);
    assert_int_equal(b.rank, 1);
    assert_int_equal(b.size, 3);
    assert_string_equal(b.rdv_addr.c_str(), "host-a");
    assert_int_equal(b.rdv_port, 12345);
    // A reply bound to another request (client nonce) or altered fails.
    assert_false(el::parse_reply(kSecret, kServerNonce, kServerNonce, line, &body, &err));
    std::string altered = line;
    altered[3] = '9';
    assert_false(el::parse_reply(kSecret, kClientNonce, kServerNonce, altered, &body, &err));
    // A rank outside the size is malformed; an error body carries its message.
    assert_false(el::parse_assignment("ok 1 3 3 h 1", &b, &err));
    assert_false(el::parse_assignment(el::error_body("below --min-np\n2"), &b, &err));
    assert_string_equal(err.c_str(), "below --min-np 2");
    el::Status s;
    assert_true(el::parse_status(el::status_body({5, true}), &s, &err));
    assert_int_equal(s.round, 5);
    assert_true(s.pending);
}

void test_first_round_waits_for_all(void **) {
    hvdrun::Membership m(2, 3);
    for (int id = 0; id < 3; ++id)
        m.add_worker(id, "h");
    m.set_waiting(2, true);
    m.set_waiting(0, true);
    assert_false(m.ready(false));
    assert_false(m.pending());  // no round yet, so none to interrupt
    m.set_waiting(1, true);
    assert_true(m.ready(false));
    std::vector<int> ids = m.form();
    assert_int_equal(ids.size(), 3);
    for (int r = 0; r < 3; ++r)  // no earlier round: start order
        assert_int_equal(ids[r], r);
    assert_int_equal(m.round(), 1);
    assert_false(m.pending());
    assert_false(m.ready(true));
}

void test_death_keeps_rank_order(void **) {
    hvdrun::Membership m(2, 4);
    for (int id = 0; id < 4; ++id) {
        m.add_worker(id, "h");
        m.set_waiting(id, true);
    }
    m.form();
    // Worker 0 (rank 0) dies; the others ask again in another order.
    m.worker_exited(0);
    m.set_waiting(3, true);
    m.set_waiting(1, true);
    assert_false(m.ready(false));
    m.set_waiting(2, true);
    assert_true(m.ready(false));
    std::vector<int> ids = m.form();
    assert_int_equal(ids.size(), 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 3);
    assert_false(m.below_min());
    m.worker_exited(2);
    m.worker_exited(3);
    assert_true(m.below_min());
}

void test_added_worker_joins_after_members(void **) {
    hvdrun::Membership m(1, 3);
    m.add_worker(0, "a");
    m.add_worker(1, "a");
    m.set_waiting(0, true);
    m.set_waiting(1, true);
    m.form();
    m.add_worker(2, "b");
    assert_true(m.pending());
    m.set_waiting(2, true);
    // The members are still in round 1: neither the rule nor its timeout forms round 2.
    assert_false(m.ready(false));
    assert_false(m.ready(true));
    m.set_waiting(1, true);
    m.set_waiting(0, true);
    assert_true(m.ready(false));
    std::vector<int> ids = m.form();
    assert_int_equal(ids.size(), 3);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 1);
    assert_int_equal(ids[2], 2);  // the new worker after the members: never rank 0
}

void test_timeout_leaves_silent_workers(void **) {
    hvdrun::Membership m(2, 3);
    for (int id = 0; id < 3; ++id)
        m.add_worker(id, "h");
    m.set_waiting(0, true);
    assert_false(m.ready(true));  // one waiting, fewer than min_np
    m.set_waiting(1, true);
    assert_false(m.ready(false));
    assert_true(m.ready(true));
    assert_int_equal(m.form().size(), 2);
    assert_true(m.pending());  // worker 2 joins a later round
    // A join whose connection closed no longer counts.
    m.set_waiting(2, true);
    m.set_waiting(2, false);
    assert_int_equal(m.waiting(), 0);
}

void test_gone_member_is_pending(void **) {
    // A member of the newest round that exits (or whose host is removed) makes the round out
    // of date, as an added worker does, so rank 0's commit interrupts the others.
    hvdrun::Membership m(1, 3);
    for (int id = 0; id < 3; ++id) {
        m.add_worker(id, "h");
        m.set_waiting(id, true);
    }
    m.form();
    assert_false(m.pending());
    m.worker_exited(2);
    assert_true(m.pending());
    m.set_waiting(0, true);
    m.set_waiting(1, true);
    std::vector<int> ids = m.form();
    assert_int_equal(ids.size(), 2);
    assert_false(m.pending());  // the worker gone is in no later round
}

void test_default_slots(void **) {
    // --slots: the slots of an entry without its own; an entry's own slots win.
    std::vector<hvdrun::HostSlots> hosts;
    std::string err;
    assert_true(hvdrun::parse_host_list("a,b:3,[::1]", &hosts, &err, 2));
    assert_int_equal(hosts.size(), 3);
    assert_int_equal(hosts[0].slots, 2);
    assert_int_equal(hosts[1].slots, 3);
    assert_int_equal(hosts[2].slots, 2);
    assert_true(hvdrun::parse_hostfile_text("a\nb:1\nc slots=4\n", &hosts, &err, 3));
    assert_int_equal(hosts.size(), 3);
    assert_int_equal(hosts[0].slots, 3);
    assert_int_equal(hosts[1].slots, 1);
    assert_int_equal(hosts[2].slots, 4);
    assert_true(hvdrun::parse_host_list("a", &hosts, &err));
    assert_int_equal(hosts[0].slots, 1);
    hvdrun::HostDiscovery d("printf 'a:2\\nb\\n'", 1.0, 4);
    assert_true(d.run_now(&hosts, &err));
    assert_int_equal(hosts.size(), 2);
    assert_int_equal(hosts[0].slots, 2);
    assert_int_equal(hosts[1].slots, 4);
}

void test_discovery_run(void **) {
    std::vector<hvdrun::HostSlots> hosts;
    std::string err;
    hvdrun::HostDiscovery ok("printf 'a:2\\nb\\n'", 1.0);
    assert_true(ok.run_now(&hosts, &err));
    assert_int_equal(hosts.size(), 2);
    assert_string_equal(hosts[0].name.c_str(), "a");
    assert_int_equal(hosts[0].slots, 2);
    assert_int_equal(hosts[1].slots, 1);
    hvdrun::HostDiscovery failing("echo a:1; exit 3", 1.0);
    assert_false(failing.run_now(&hosts, &err));
    assert_non_null(std::strstr(err.c_str(), "failed"));
    hvdrun::HostDiscovery empty("true", 1.0);
    assert_false(empty.run_now(&hosts, &err));
    assert_non_null(std::strstr(err.c_str(), "no hosts listed"));
}

void test_discovery_polls(void **) {
    // tick() starts a run when due and reports its hosts once it has ended.
    hvdrun::HostDiscovery d("echo c:3", 0.05);
    std::vector<hvdrun::HostSlots> hosts;
    bool found = false;
    for (int i = 0; i < 200 && !found; ++i) {
        std::vector<pollfd> fds;
        d.add_poll_fds(&fds);
        if (poll(fds.data(), fds.size(), d.poll_timeout_ms()) > 0)
            d.on_poll(fds.data(), fds.size());
        found = d.tick(&hosts);
    }
    assert_true(found);
    assert_int_equal(hosts.size(), 1);
    assert_string_equal(hosts[0].name.c_str(), "c");
    assert_int_equal(hosts[0].slots, 3);
}

hvdrun::ParseOutcome parse(std::vector<std::string> args, hvdrun::Options *o, std::string *err) {
    return hvdrun::parse_options(args, o, err);
}

void test_elastic_options(void **) {
    hvdrun::Options o;
    std::string err;
    assert_true(parse({"-np", "3", "--min-np", "2", "--max-np", "4", "-H", "a:4", "prog"}, &o,
                      &err) == hvdrun::ParseOutcome::kRun);
    assert_true(o.elastic);
    assert_int_equal(o.min_np, 2);
    assert_int_equal(o.max_np, 4);
    hvdrun::Options d;
    assert_true(
        parse({"-np", "2", "--host-discovery-script", "s.sh", "--elastic-timeout", "30", "prog"},
              &d, &err) == hvdrun::ParseOutcome::kRun);
    assert_int_equal(d.min_np, 2);
    assert_true(d.max_np > 1000);
    assert_true(d.elastic_timeout == 30.0);
    hvdrun::Options e;
    assert_true(parse({"-np", "2", "--min-np", "3", "prog"}, &e, &err) ==
                hvdrun::ParseOutcome::kError);
    assert_string_equal(err.c_str(), "--min-np 3 is more than -np 2");
    hvdrun::Options f;
    assert_true(parse({"-np", "2", "--max-np", "3", "prog"}, &f, &err) ==
                hvdrun::ParseOutcome::kError);
    hvdrun::Options g;
    assert_true(parse({"-np", "2", "prog"}, &g, &err) == hvdrun::ParseOutcome::kRun);
    assert_false(g.elastic);
    hvdrun::Options c;
    assert_true(parse({"-np", "2", "--min-np", "1", "--elastic-controller", "-H", "10.0.0.1:2"}, &c,
                      &err) == hvdrun::ParseOutcome::kRun);
    assert_true(c.elastic && c.elastic_controller);
    assert_true(c.max_np > 1000);
    hvdrun::Options cp;
    assert_true(parse({"-np", "2", "--elastic-controller", "prog"}, &cp, &err) ==
                hvdrun::ParseOutcome::kError);
    assert_string_equal(err.c_str(),
                        "--elastic-controller takes no program: the controller starts the "
                        "workers");
}

void test_slots_and_reset_limit_options(void **) {
    hvdrun::Options o;
    std::string err;
    assert_true(parse({"-np", "3", "--host-discovery-script", "s.sh", "--slots", "2",
                       "--reset-limit", "0", "prog"},
                      &o, &err) == hvdrun::ParseOutcome::kRun);
    assert_int_equal(o.slots, 2);
    assert_int_equal(o.reset_limit, 0);
    hvdrun::Options d;
    assert_true(parse({"-np", "2", "--min-np", "1", "prog"}, &d, &err) ==
                hvdrun::ParseOutcome::kRun);
    assert_int_equal(d.slots, 0);
    assert_int_equal(d.reset_limit, -1);
    hvdrun::Options s;
    assert_true(parse({"-np", "2", "--slots", "0", "prog"}, &s, &err) ==
                hvdrun::ParseOutcome::kError);
    assert_string_equal(err.c_str(), "invalid --slots value '0' (expected an integer >= 1)");
    hvdrun::Options r;
    assert_true(parse({"-np", "2", "--reset-limit=3", "prog"}, &r, &err) ==
                hvdrun::ParseOutcome::kError);
    assert_non_null(std::strstr(err.c_str(), "--reset-limit applies to elastic jobs"));
    hvdrun::Options n;
    assert_true(parse({"-np", "2", "--min-np", "1", "--reset-limit", "-1", "prog"}, &n, &err) ==
                hvdrun::ParseOutcome::kError);
}

void test_cooldown_range_option(void **) {
    std::string err;
    hvdrun::Options o;
    assert_true(
        parse({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "10", "100", "prog"}, &o,
              &err) == hvdrun::ParseOutcome::kRun);
    assert_true(o.cooldown_min == 10.0 && o.cooldown_max == 100.0);
    assert_int_equal(static_cast<int>(o.command.size()), 1);
    assert_string_equal(o.command[0].c_str(), "prog");
    hvdrun::Options inline_form;
    assert_true(parse({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range=0.5,2", "prog"},
                      &inline_form, &err) == hvdrun::ParseOutcome::kRun);
    assert_true(inline_form.cooldown_min == 0.5 && inline_form.cooldown_max == 2.0);
    hvdrun::Options none;
    assert_true(parse({"-np", "2", "--min-np", "1", "prog"}, &none, &err) ==
                hvdrun::ParseOutcome::kRun);
    assert_true(none.cooldown_min < 0);
    hvdrun::Options reversed;
    assert_true(
        parse({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "100", "10", "prog"},
              &reversed, &err) == hvdrun::ParseOutcome::kError);
    assert_string_equal(err.c_str(),
                        "invalid --blacklist-cooldown-range value '100 10' (expected MIN MAX, "
                        "seconds with 0 <= MIN <= MAX)");
    hvdrun::Options one;
    assert_true(parse({"-np", "2", "--min-np", "1", "--blacklist-cooldown-range", "10"}, &one,
                      &err) == hvdrun::ParseOutcome::kError);
    assert_string_equal(err.c_str(), "option --blacklist-cooldown-range needs two values");
    hvdrun::Options static_job;
    assert_true(parse({"-np", "2", "--blacklist-cooldown-range", "1", "2", "prog"}, &static_job,
                      &err) == hvdrun::ParseOutcome::kError);
    assert_non_null(std::strstr(err.c_str(), "--blacklist-cooldown-range applies to elastic jobs"));
}

// Cooldowns double with each failure of a host, with a random part below MIN, capped at MAX;
// a host is out until its cooldown ends and is returned once; without a range, for good.
void test_blacklist_cooldowns(void **) {
    using Clock = hvdrun::HostBlacklist::Clock;
    const Clock::time_point t0 = Clock::now();
    const auto at = [&](double s) {
        return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    };
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        hvdrun::HostBlacklist b(2.0, 10.0, seed);
        assert_int_equal(b.ms_to_next_return(t0), -1);
        const double first = b.add("a", t0);
        assert_true(first >= 2.0 && first < 4.0);
        assert_true(b.excluded("a", t0) && !b.excluded("b", t0));
        assert_true(b.excluded("a", at(first - 0.01)));
        assert_true(b.take_returned(at(first - 0.01)).empty());
        const int ms = b.ms_to_next_return(t0);
        assert_true(ms >= 2000 && ms <= 4000);
        assert_false(b.excluded("a", at(first)));
        std::vector<std::string> back = b.take_returned(at(first));
        assert_int_equal(static_cast<int>(back.size()), 1);
        assert_string_equal(back[0].c_str(), "a");
        assert_true(b.take_returned(at(first + 1)).empty());
        assert_int_equal(b.ms_to_next_return(at(first)), -1);
        const double second = b.add("a", at(first));
        assert_true(second >= 4.0 && second < 6.0);
        assert_int_equal(b.failures("a"), 2);
        const double third = b.add("a", at(first + second));
        assert_true(third >= 8.0 && third <= 10.0);
        for (int i = 0; i < 70; ++i)
            assert_true(b.add("a", t0) <= 10.0);
        assert_true(b.add("a", t0) == 10.0);
    }
    hvdrun::HostBlacklist forever;
    assert_true(forever.add("a", t0) < 0);
    assert_true(forever.excluded("a", at(1e6)));
    assert_true(forever.take_returned(at(1e6)).empty());
    assert_int_equal(forever.ms_to_next_return(t0), -1);
    hvdrun::HostBlacklist zero(0.0, 0.0, 7);
    assert_true(zero.add("a", t0) == 0.0);
    assert_false(zero.excluded("a", t0));
}

void test_controller_lines(void **) {
    namespace ctl = hvdrun::controller;
    assert_string_equal(
        ctl::start_line(3, "10.0.0.2", {{"HVD_WORKER_ID", "3"}, {"A", "x y%\nz"}}).c_str(),
        "start 3 10.0.0.2 HVD_WORKER_ID=3 A=x%20y%25%0Az\n");
    std::string decoded;
    assert_true(ctl::decode("x%20y%25%0Az", &decoded));
    assert_string_equal(decoded.c_str(), "x y%\nz");
    assert_false(ctl::decode("bad%2", &decoded));
    assert_false(ctl::decode("bad%zz", &decoded));
    assert_string_equal(ctl::failed_line("a\nb").c_str(), "failed a b\n");
    assert_string_equal(ctl::stop_line(7).c_str(), "stop 7\n");

    ctl::Input in;
    std::string err;
    assert_true(ctl::parse_input("exited 4 137", &in, &err));
    assert_true(in.kind == ctl::Input::kExited && in.id == 4 && in.code == 137);
    assert_true(ctl::parse_input("hosts 10.0.0.1:2 h%20x:1", &in, &err));
    assert_true(in.kind == ctl::Input::kHosts && in.hosts.size() == 2);
    assert_string_equal(in.hosts[1].name.c_str(), "h x");
    assert_int_equal(in.hosts[0].slots, 2);
    assert_true(ctl::parse_input("hosts", &in, &err) && in.hosts.empty());
    assert_true(ctl::parse_input("stop", &in, &err) && in.kind == ctl::Input::kStop);
    assert_false(ctl::parse_input("exited 4", &in, &err));
    assert_false(ctl::parse_input("exited 4 256", &in, &err));
    assert_false(ctl::parse_input("hosts a:0", &in, &err));
    assert_false(ctl::parse_input("hosts a", &in, &err));
    assert_false(ctl::parse_input("launch 1", &in, &err));
    assert_string_equal(err.c_str(), "unknown line 'launch 1' (expected exited, hosts or stop)");
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greeting),
        cmocka_unit_test(test_request_round_trip),
        cmocka_unit_test(test_request_authentication),
        cmocka_unit_test(test_reply_and_assignment),
        cmocka_unit_test(test_first_round_waits_for_all),
        cmocka_unit_test(test_death_keeps_rank_order),
        cmocka_unit_test(test_added_worker_joins_after_members),
        cmocka_unit_test(test_timeout_leaves_silent_workers),
        cmocka_unit_test(test_gone_member_is_pending),
        cmocka_unit_test(test_default_slots),
        cmocka_unit_test(test_discovery_run),
        cmocka_unit_test(test_discovery_polls),
        cmocka_unit_test(test_elastic_options),
        cmocka_unit_test(test_slots_and_reset_limit_options),
        cmocka_unit_test(test_cooldown_range_option),
        cmocka_unit_test(test_blacklist_cooldowns),
        cmocka_unit_test(test_controller_lines),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
