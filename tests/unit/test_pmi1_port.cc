// SPDX-License-Identifier: Apache-2.0
// connect_pmi1_port (bootstrap/pmi1_exchange.h), Hydra's PMI_PORT model, against a process
// manager played by a thread of this test on a real TCP socket, answering as a real
// `mpiexec.hydra -pmi-port` does: malformed PMI_PORT/PMI_ID, a manager that closes, one that
// names a rank outside its size, and the connection made once per process.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/pmi1_exchange.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"

using namespace hvd;
using namespace hvd::bootstrap;

namespace {

// A manager that accepts one connection, reads the client's first line, answers `reply`, then
// holds the connection for hold_ms (or until the client closes it) before closing it.
// first_line() waits for it to finish and returns the line it read.
class Manager {
  public:
    explicit Manager(std::string reply, int hold_ms = 200) : listener_(listen_tcp("127.0.0.1", 0)) {
        port_ = bound_port(listener_.get());
        thread_ = std::thread([this, reply, hold_ms] { serve(reply, hold_ms); });
    }
    ~Manager() {
        if (thread_.joinable()) thread_.join();
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    std::string first_line() {
        thread_.join();
        return got_;
    }

  private:
    void serve(const std::string &reply, int hold_ms) {
        pollfd p{listener_.get(), POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) return;
        Fd conn = accept_tcp(listener_.get());
        if (!conn.valid()) return;
        char c = 0;
        for (int waited = 0; waited < 5000;) {
            ssize_t n = ::recv(conn.get(), &c, 1, MSG_DONTWAIT);
            if (n == 1 && c == '\n') break;
            if (n == 1) {
                got_ += c;
                continue;
            }
            pollfd r{conn.get(), POLLIN, 0};
            waited += 10;
            ::poll(&r, 1, 10);
        }
        ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
        // Hold the connection until the client has read and gone (or closed it), as Hydra does.
        pollfd r{conn.get(), POLLIN, 0};
        ::poll(&r, 1, hold_ms);
    }

    Fd listener_;
    int port_ = 0;
    std::thread thread_;
    std::string got_;
};

hvd_status_t connect_fails(const std::string &port, const std::string &id, std::string *what) {
    try {
        connect_pmi1_port(port, id, Deadline::after_ms(3000));
    } catch (const Error &e) {
        *what = e.what();
        return e.status();
    }
    fail_msg("connect_pmi1_port(%s, %s) succeeded", port.c_str(), id.c_str());
    return HVD_OK;
}

void test_malformed_variables(void **) {
    std::string what;
    for (const char *port : {"nohost", ":5", "host:0", "host:70000", "host:12ab", "host:"}) {
        assert_int_equal(connect_fails(port, "0", &what), HVD_ERR_INVALID_ARG);
        assert_non_null(strstr(what.c_str(), "is not host:port"));
    }
    for (const char *id : {"x", "-1", "1.5", ""}) {
        assert_int_equal(connect_fails("127.0.0.1:1", id, &what), HVD_ERR_INVALID_ARG);
        assert_non_null(strstr(what.c_str(), "PMI_ID"));
    }
}

void test_manager_out_of_protocol(void **) {
    std::string what;
    {
        Manager m("");  // closes after reading the introduction
        assert_int_equal(connect_fails(m.address(), "1", &what), HVD_ERR_TRANSPORT);
        assert_non_null(strstr(what.c_str(), "closed"));
        assert_string_equal(m.first_line().c_str(), "cmd=initack pmiid=1");
    }
    {
        Manager m("cmd=initack\ncmd=set size=2\ncmd=set rank=5\ncmd=set debug=0\n");
        assert_int_equal(connect_fails(m.address(), "5", &what), HVD_ERR_TRANSPORT);
        assert_non_null(strstr(what.c_str(), "rank 5 of size 2"));
    }
    {
        Manager m("cmd=init_refused\n");
        assert_int_equal(connect_fails(m.address(), "0", &what), HVD_ERR_TRANSPORT);
        assert_non_null(strstr(what.c_str(), "not initack"));
    }
    {
        Manager m("cmd=initack\ncmd=set size=2\n", 2000);  // then silent past the deadline
        try {
            connect_pmi1_port(m.address(), "0", Deadline::after_ms(300));
            fail_msg("a silent manager was taken for an answer");
        } catch (const Error &e) {
            assert_int_equal(e.status(), HVD_ERR_TIMED_OUT);
            assert_non_null(strstr(e.what(), "PMI_PORT=127.0.0.1:"));
        }
    }
}

// Last: a success is kept for the rest of the process.
void test_connects_once(void **) {
    Manager m("cmd=initack\ncmd=set size=3\ncmd=set rank=2\ncmd=set debug=0\n");
    Pmi1PortLaunch first = connect_pmi1_port(m.address(), "2", Deadline::after_ms(3000));
    assert_int_equal(first.rank, 2);
    assert_int_equal(first.size, 3);
    assert_true(first.fd >= 0);
    assert_string_equal(m.first_line().c_str(), "cmd=initack pmiid=2");
    // The manager accepts no second connection: the same one comes back.
    Pmi1PortLaunch again = connect_pmi1_port(m.address(), "2", Deadline::after_ms(100));
    assert_int_equal(again.fd, first.fd);
    assert_int_equal(again.rank, 2);
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_variables),
        cmocka_unit_test(test_manager_out_of_protocol),
        cmocka_unit_test(test_connects_once),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
