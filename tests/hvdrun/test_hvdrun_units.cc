// SPDX-License-Identifier: Apache-2.0
// Unit tests of hvdrun's pure parts: option parsing, host lists and rank placement, the
// remote command line, rank variables, and the line relay. The launcher end to end is tested
// by hvdrun_cases.sh.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

// cmocka 1.1.5's header has no extern "C" guard of its own.
extern "C" {
#include <cmocka.h>
}

#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "hosts.h"
#include "options.h"
#include "output_relay.h"
#include "rank_env.h"
#include "remote_command.h"

using namespace hvdrun;

namespace {

using Args = std::vector<std::string>;

ParseOutcome parse(const Args &args, Options *opts, std::string *err) {
    *opts = Options();
    return parse_options(args, opts, err);
}

void test_options_full(void **) {
    Options o;
    std::string err;
    Args args = {"-np",
                 "4",
                 "-H",
                 "a:2,b:2",
                 "-x",
                 "A=1",
                 "-x",
                 "B",
                 "--grace-seconds",
                 "2.5",
                 "--no-prefix",
                 "--rendezvous-addr",
                 "10.0.0.1",
                 "--",
                 "prog",
                 "-np",
                 "3"};
    assert_int_equal(static_cast<int>(parse(args, &o, &err)), static_cast<int>(ParseOutcome::kRun));
    assert_int_equal(o.num_proc, 4);
    assert_string_equal(o.hosts.c_str(), "a:2,b:2");
    assert_int_equal(o.exports.size(), 2);
    assert_string_equal(o.exports[0].c_str(), "A=1");
    assert_string_equal(o.exports[1].c_str(), "B");
    assert_true(o.grace_given);
    assert_true(o.grace_seconds == 2.5);
    assert_true(o.no_prefix);
    assert_string_equal(o.rendezvous_addr.c_str(), "10.0.0.1");
    assert_true(o.command == (Args{"prog", "-np", "3"}));
}

// The first non-option ends hvdrun's options: the program's own options stay its own.
void test_options_stop_at_program(void **) {
    Options o;
    std::string err;
    assert_int_equal(static_cast<int>(parse({"-np", "2", "prog", "--foo", "-x"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kRun));
    assert_true(o.command == (Args{"prog", "--foo", "-x"}));
    assert_true(o.exports.empty());
}

void test_options_aliases(void **) {
    Options o;
    std::string err;
    for (const Args &np : {Args{"-n", "3"}, Args{"--num-proc", "3"}, Args{"--num-proc=3"}}) {
        Args args = np;
        args.insert(args.end(), {"-p", "2222", "--start-timeout=9", "--verbose", "true"});
        assert_int_equal(static_cast<int>(parse(args, &o, &err)),
                         static_cast<int>(ParseOutcome::kRun));
        assert_int_equal(o.num_proc, 3);
        assert_int_equal(o.ssh_port, 2222);
        assert_int_equal(o.start_timeout, 9);
        assert_true(o.verbose);
    }
    assert_int_equal(static_cast<int>(parse({"--ssh-port=22", "-np", "1", "x"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kRun));
    assert_int_equal(o.ssh_port, 22);
    assert_int_equal(static_cast<int>(parse({"--hosts", "h:3", "-np", "1", "x"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kRun));
    assert_string_equal(o.hosts.c_str(), "h:3");
}

void test_options_help_version(void **) {
    Options o;
    std::string err;
    assert_int_equal(static_cast<int>(parse({"-np", "2", "-h"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kHelp));
    assert_int_equal(static_cast<int>(parse({"--help"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kHelp));
    assert_int_equal(static_cast<int>(parse({"--version"}, &o, &err)),
                     static_cast<int>(ParseOutcome::kVersion));
    assert_non_null(strstr(usage_text().c_str(), "--grace-seconds"));
}

void test_options_errors(void **) {
    struct Case {
        Args args;
        const char *message;  // a part of the expected error
    };
    const Case cases[] = {
        {{"--bogus", "-np", "1", "x"}, "unknown option '--bogus'"},
        {{"--bogus=3", "-np", "1", "x"}, "unknown option '--bogus'"},
        {{"-np", "1", "--ssh", "x"}, "unknown option '--ssh'"},
        {{"x"}, "missing -np"},
        {{"-np", "2"}, "missing the program"},
        {{"-np"}, "-np needs a value"},
        {{"-np", "0", "x"}, "invalid -np value '0'"},
        {{"-n", "two", "x"}, "invalid -n value 'two'"},
        {{"-np", "1", "-H", "a", "--hostfile", "f", "x"}, "cannot be used together"},
        {{"-np", "1", "-x", "1A=2", "x"}, "invalid -x value '1A=2'"},
        {{"-np", "1", "-x", "=2", "x"}, "invalid -x value '=2'"},
        {{"-np", "1", "--grace-seconds", "-1", "x"}, "invalid --grace-seconds value '-1'"},
        {{"-np", "1", "--grace-seconds=nan", "x"}, "invalid --grace-seconds value 'nan'"},
        {{"-np", "1", "-p", "0", "x"}, "invalid -p value '0'"},
        {{"-np", "1", "--no-prefix=1", "x"}, "--no-prefix takes no value"},
    };
    for (const Case &c : cases) {
        Options o;
        std::string err;
        assert_int_equal(static_cast<int>(parse(c.args, &o, &err)),
                         static_cast<int>(ParseOutcome::kError));
        if (err.find(c.message) == std::string::npos) {
            fail_msg("error '%s' does not contain '%s'", err.c_str(), c.message);
        }
    }
}

void test_grace_env(void **) {
    Options o;
    std::string err;
    assert_true(apply_grace_env("1.5", &o, &err));
    assert_true(o.grace_seconds == 1.5);
    assert_true(apply_grace_env(nullptr, &o, &err));
    assert_true(o.grace_seconds == 1.5);
    Options given;
    given.grace_seconds = 7;
    given.grace_given = true;
    assert_true(apply_grace_env("1", &given, &err));
    assert_true(given.grace_seconds == 7);  // the command line wins
    assert_false(apply_grace_env("soon", &o, &err));
    assert_non_null(strstr(err.c_str(), "HVD_RUN_GRACE_SECONDS"));
}

void test_host_list(void **) {
    std::vector<HostSlots> hosts;
    std::string err;
    assert_true(parse_host_list("a:2,b,[::1]:3,fe80::1,c.example.com:16", &hosts, &err));
    assert_int_equal(hosts.size(), 5);
    const char *names[] = {"a", "b", "::1", "fe80::1", "c.example.com"};
    const int slots[] = {2, 1, 3, 1, 16};
    for (size_t i = 0; i < 5; ++i) {
        assert_string_equal(hosts[i].name.c_str(), names[i]);
        assert_int_equal(hosts[i].slots, slots[i]);
    }
}

void test_host_list_errors(void **) {
    const char *bad[] = {"",     "a:0",    "a:",    "a:x",
                         ",",    "a,,b",   "a,a:2", "-oProxyCommand=x:1",
                         "[::1", "[::1]x", "[]:2",  ":3"};
    for (const char *spec : bad) {
        std::vector<HostSlots> hosts;
        std::string err;
        if (parse_host_list(spec, &hosts, &err)) fail_msg("'%s' was accepted", spec);
        assert_false(err.empty());
    }
}

void test_hostfile_text(void **) {
    std::vector<HostSlots> hosts;
    std::string err;
    const char *text = "# cluster\nnode1 slots=4\n\n  node2:2   # comment\nnode3\n";
    assert_true(parse_hostfile_text(text, &hosts, &err));
    assert_int_equal(hosts.size(), 3);
    assert_string_equal(hosts[0].name.c_str(), "node1");
    assert_int_equal(hosts[0].slots, 4);
    assert_string_equal(hosts[1].name.c_str(), "node2");
    assert_int_equal(hosts[1].slots, 2);
    assert_string_equal(hosts[2].name.c_str(), "node3");
    assert_int_equal(hosts[2].slots, 1);
    assert_false(parse_hostfile_text("a slots=2\nb max=3\n", &hosts, &err));
    assert_string_equal(err.c_str(), "line 2: unexpected 'max=3' (expected slots=N)");
    assert_false(parse_hostfile_text("a slots=0\n", &hosts, &err));
    assert_false(parse_hostfile_text("# nothing\n", &hosts, &err));
    assert_false(read_hostfile("/nonexistent/hostfile", &hosts, &err));
    assert_non_null(strstr(err.c_str(), "/nonexistent/hostfile"));
}

void expect_placement(const std::vector<Placement> &got, size_t i, const char *host, int local,
                      int local_size, int cross, int cross_size) {
    const Placement &p = got.at(i);
    assert_int_equal(p.rank, i);
    assert_string_equal(p.host.c_str(), host);
    assert_int_equal(p.local_rank, local);
    assert_int_equal(p.local_size, local_size);
    assert_int_equal(p.cross_rank, cross);
    assert_int_equal(p.cross_size, cross_size);
}

// Uneven hosts a:3, b:1, c:2. Worked out by hand: local rank 0 lives on a, b, c (cross size
// 3); local rank 1 on a and c (2); local rank 2 on a only (1).
void test_placement_uneven(void **) {
    std::vector<Placement> got;
    std::string err;
    assert_true(place_ranks({{"a", 3}, {"b", 1}, {"c", 2}}, 6, &got, &err));
    assert_int_equal(got.size(), 6);
    expect_placement(got, 0, "a", 0, 3, 0, 3);
    expect_placement(got, 1, "a", 1, 3, 0, 2);
    expect_placement(got, 2, "a", 2, 3, 0, 1);
    expect_placement(got, 3, "b", 0, 1, 1, 3);
    expect_placement(got, 4, "c", 0, 2, 2, 3);
    expect_placement(got, 5, "c", 1, 2, 1, 2);
}

void test_placement_partial(void **) {
    std::vector<Placement> got;
    std::string err;
    // The last host used is only partly filled; the unused host does not count.
    assert_true(place_ranks({{"a", 2}, {"b", 2}, {"c", 4}}, 3, &got, &err));
    expect_placement(got, 0, "a", 0, 2, 0, 2);
    expect_placement(got, 1, "a", 1, 2, 0, 1);
    expect_placement(got, 2, "b", 0, 1, 1, 2);
    assert_false(place_ranks({{"a", 2}, {"b", 1}}, 4, &got, &err));
    assert_string_equal(err.c_str(), "-np 4 needs more slots than the hosts offer (3)");
    assert_true(got.empty());
}

void test_local_host(void **) {
    assert_true(is_local_host("localhost", "node7.example.com"));
    assert_true(is_local_host("127.0.0.1", "node7.example.com"));
    assert_true(is_local_host("node7.example.com", "node7.example.com"));
    assert_true(is_local_host("node7", "node7.example.com"));
    assert_false(is_local_host("node8", "node7.example.com"));
    assert_false(is_local_host("node7.other.com", "node7.example.com"));
    assert_false(this_host_name().empty());
}

// The reference for quoting is the shell itself: each quoted word must come back unchanged.
void test_shell_quote_round_trip(void **) {
    const std::string words[] = {"plain",      "a b",         "it's",      "$HOME", "\"q\"", "",
                                 "x;rm -rf /", "back\\slash", "new\nline", "*",     "'"};
    for (const std::string &w : words) {
        std::string cmd = "printf '%s' " + shell_quote(w);
        FILE *sh = popen(cmd.c_str(), "r");
        assert_non_null(sh);
        std::string got;
        char buf[256];
        for (size_t n; (n = fread(buf, 1, sizeof(buf), sh)) > 0;)
            got.append(buf, n);
        assert_int_equal(pclose(sh), 0);
        if (got != w) fail_msg("'%s' came back as '%s'", w.c_str(), got.c_str());
    }
    assert_string_equal(shell_quote("a/b-c.d=e").c_str(), "a/b-c.d=e");
    assert_string_equal(shell_quote("it's").c_str(), "'it'\\''s'");
}

void test_ssh_argv(void **) {
    SshOptions ssh;
    ssh.port = 2200;
    ssh.connect_timeout = 30;
    ssh.alive_timeout = 20;  // 3 unanswered messages, 6 s apart
    Args argv = ssh_argv("node2", ssh, "/home/u/my job", {{"HVD_RANK", "1"}, {"X", "a b"}},
                         {"python3", "train.py", "--lr=0.1"});
    Args expected = {"ssh",
                     "-o",
                     "BatchMode=yes",
                     "-o",
                     "ConnectTimeout=30",
                     "-o",
                     "ServerAliveInterval=6",
                     "-o",
                     "ServerAliveCountMax=3",
                     "-p",
                     "2200",
                     "node2",
                     "read -r HVD_SECRET && export HVD_SECRET && cd '/home/u/my job' || exit; "
                     "exec 3<&0; env HVD_RANK=1 'X=a b' python3 train.py --lr=0.1 </dev/null "
                     "3<&- & p=$!; { cat >/dev/null; kill -TERM $p; sleep 3; kill -KILL $p; } "
                     "<&3 >/dev/null 2>&1 & w=$!; exec 3<&-; wait $p; s=$?; kill $w 2>/dev/null; "
                     "exit $s"};
    assert_true(argv == expected);
    Args plain = ssh_argv("n", SshOptions(), "/", {{"HVD_RANK", "0"}}, {"p"});
    assert_true(plain == (Args{"ssh", "-o", "BatchMode=yes", "n",
                               "read -r HVD_SECRET && export HVD_SECRET && cd / || exit; "
                               "exec 3<&0; env HVD_RANK=0 p </dev/null 3<&- & p=$!; { cat "
                               ">/dev/null; kill -TERM $p; sleep 3; kill -KILL $p; } <&3 "
                               ">/dev/null 2>&1 & w=$!; exec 3<&-; wait $p; s=$?; kill $w "
                               "2>/dev/null; exit $s"}));
}

void test_rank_variables(void **) {
    Placement p;
    p.rank = 5;
    p.host = "node1";
    p.local_rank = 1;
    p.local_size = 4;
    p.cross_rank = 1;
    p.cross_size = 2;
    JobIdentity job{"10.1.2.3", 29500, std::string(64, 'a'), "0123456789abcdef"};
    std::vector<EnvVar> expected = {{"HVD_RANK", "5"},
                                    {"HVD_SIZE", "8"},
                                    {"HVD_LOCAL_RANK", "1"},
                                    {"HVD_LOCAL_SIZE", "4"},
                                    {"HVD_CROSS_RANK", "1"},
                                    {"HVD_CROSS_SIZE", "2"},
                                    {"HVD_HOSTNAME", "node1"},
                                    {"HVD_RENDEZVOUS_ADDR", "10.1.2.3"},
                                    {"HVD_RENDEZVOUS_PORT", "29500"},
                                    {"HVD_SECRET", std::string(64, 'a')},
                                    {"HVD_JOB_ID", "0123456789abcdef"}};
    assert_true(rank_variables(p, 8, job) == expected);
}

void test_resolve_exports(void **) {
    auto lookup = [](const char *name) -> const char * {
        return strcmp(name, "SET") == 0 ? "value" : nullptr;
    };
    std::vector<std::string> unset;
    std::vector<EnvVar> vars = resolve_exports({"A=1=2", "SET", "GONE", "E="}, lookup, &unset);
    std::vector<EnvVar> expected = {{"A", "1=2"}, {"SET", "value"}, {"E", ""}};
    assert_true(vars == expected);
    assert_true(unset == (std::vector<std::string>{"GONE"}));
}

void test_rendezvous_addr(void **) {
    std::vector<Placement> local(2), mixed(2), remote(2);
    local[0].host = "localhost";
    local[1].host = "127.0.0.1";
    mixed[0].host = "me";
    mixed[1].host = "other";
    remote[0].host = "n1";
    remote[1].host = "me";
    assert_string_equal(choose_rendezvous_addr("", local, "me").c_str(), "127.0.0.1");
    assert_string_equal(choose_rendezvous_addr("", mixed, "me").c_str(), "me");
    assert_string_equal(choose_rendezvous_addr("", remote, "me").c_str(), "n1");
    assert_string_equal(choose_rendezvous_addr("10.9.9.9", local, "me").c_str(), "10.9.9.9");
}

// The chosen port is free: it can be bound again right away.
void test_free_port(void **) {
    int port = pick_free_port("127.0.0.1");
    assert_in_range(port, 1, 65535);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
    close(fd);
    // Outside the kernel's own range, where no outgoing connection can take it meanwhile.
    PortRange kernel = local_port_range();
    if (kernel.lo - 10000 + 65535 - kernel.hi >= 64) {
        assert_true(port < kernel.lo || port > kernel.hi);
        assert_true(port >= 10000);
    }
    int wildcard = pick_free_port("no-such-host.invalid");  // wildcard fallback
    assert_in_range(wildcard, 1, 65535);
}

// Binds `port` of 127.0.0.1, with SO_REUSEADDR when `reuse` (as rank 0's server does) or
// without (as a launcher's test bind does); the socket, or -1 with errno set.
int bind_loopback(int port, bool reuse) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0) return fd;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

// While reserved, a port refuses other launchers' test binds but lets rank 0's server bind
// and listen, again after a first server closed; a name that is not a loopback address is
// reserved on every interface, where rank 0's server would listen.
void test_reserved_port(void **) {
    for (const char *addr : {"127.0.0.1", "10.9.9.9"}) {
        ReservedPort r = reserve_rendezvous_port(addr);
        assert_in_range(r.port, 1, 65535);
        assert_true(r.fd >= 0);
        assert_true(fcntl(r.fd, F_GETFD) & FD_CLOEXEC);
        PortRange kernel = local_port_range();
        if (kernel.lo - 10000 + 65535 - kernel.hi >= 64)
            assert_true(r.port >= 10000 && (r.port < kernel.lo || r.port > kernel.hi));
        for (int session = 0; session < 2; ++session) {
            assert_int_equal(bind_loopback(r.port, false), -1);
            assert_int_equal(errno, EADDRINUSE);
            int server = bind_loopback(r.port, true);
            assert_true(server >= 0);
            assert_int_equal(listen(server, 4), 0);
            assert_int_equal(bind_loopback(r.port, true), -1);  // one server at a time
            close(server);
        }
        assert_int_equal(bind_loopback(r.port, false), -1);
        close(r.fd);
        int free_again = bind_loopback(r.port, false);
        assert_true(free_again >= 0);
        close(free_again);
    }
}

// The range comes from the file; anything unreadable or senseless gives Linux's default.
void test_local_port_range(void **) {
    char path[] = "/tmp/hvdrun-port-range-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    auto range_of = [&](const char *text) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        return local_port_range(path);
    };
    PortRange r = range_of("20000\t30000\n");
    assert_int_equal(r.lo, 20000);
    assert_int_equal(r.hi, 30000);
    for (const char *bad : {"", "junk", "30000 20000", "0 100", "1000 70000"}) {
        r = range_of(bad);
        assert_int_equal(r.lo, 32768);
        assert_int_equal(r.hi, 60999);
    }
    unlink(path);
    r = local_port_range("/nonexistent/ip_local_port_range");
    assert_int_equal(r.lo, 32768);
}

void test_random_hex(void **) {
    std::string a = random_hex(32), b = random_hex(32);
    assert_int_equal(a.size(), 64);
    assert_int_equal(a.find_first_not_of("0123456789abcdef"), std::string::npos);
    assert_true(a != b);
}

std::string file_text(FILE *f) {
    fflush(f);
    rewind(f);
    std::string text;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;)
        text.append(buf, n);
    return text;
}

void test_line_relay(void **) {
    FILE *f = tmpfile();
    assert_non_null(f);
    LineRelay relay(rank_prefix(1, "stdout"), fileno(f));
    relay.feed("ab", 2);
    assert_string_equal(file_text(f).c_str(), "");  // nothing until the line is complete
    relay.feed("c\nde", 4);
    relay.feed("f\n\ng", 4);
    assert_string_equal(file_text(f).c_str(),
                        "[1]<stdout>: abc\n[1]<stdout>: def\n[1]<stdout>: \n");
    relay.finish();
    assert_string_equal(file_text(f).c_str(),
                        "[1]<stdout>: abc\n[1]<stdout>: def\n[1]<stdout>: \n[1]<stdout>: g\n");
    fclose(f);
}

void test_line_relay_unprefixed_and_long(void **) {
    FILE *f = tmpfile();
    LineRelay plain("", fileno(f));
    plain.feed("x\ny", 3);
    plain.finish();
    assert_string_equal(file_text(f).c_str(), "x\ny");  // passed through unchanged
    fclose(f);

    f = tmpfile();
    LineRelay relay(rank_prefix(12, "stderr"), fileno(f));
    std::string long_line(LineRelay::kMaxLine + 10, 'z');
    relay.feed(long_line.data(), long_line.size());
    relay.feed("\n", 1);
    std::string expected = "[12]<stderr>: " + std::string(LineRelay::kMaxLine, 'z') + "\n" +
                           "[12]<stderr>: " + std::string(10, 'z') + "\n";
    assert_true(file_text(f) == expected);
    fclose(f);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_full),
        cmocka_unit_test(test_options_stop_at_program),
        cmocka_unit_test(test_options_aliases),
        cmocka_unit_test(test_options_help_version),
        cmocka_unit_test(test_options_errors),
        cmocka_unit_test(test_grace_env),
        cmocka_unit_test(test_host_list),
        cmocka_unit_test(test_host_list_errors),
        cmocka_unit_test(test_hostfile_text),
        cmocka_unit_test(test_placement_uneven),
        cmocka_unit_test(test_placement_partial),
        cmocka_unit_test(test_local_host),
        cmocka_unit_test(test_shell_quote_round_trip),
        cmocka_unit_test(test_ssh_argv),
        cmocka_unit_test(test_rank_variables),
        cmocka_unit_test(test_resolve_exports),
        cmocka_unit_test(test_rendezvous_addr),
        cmocka_unit_test(test_free_port),
        cmocka_unit_test(test_reserved_port),
        cmocka_unit_test(test_local_port_range),
        cmocka_unit_test(test_random_hex),
        cmocka_unit_test(test_line_relay),
        cmocka_unit_test(test_line_relay_unprefixed_and_long),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
