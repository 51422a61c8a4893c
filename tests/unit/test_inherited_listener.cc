// Rank 0 serving the rendezvous on a socket its launcher bound (HVD_RENDEZVOUS_FD): what is
// taken, what is left alone, a client that connected before the server started, and later
// sessions of the process on the same socket.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "bootstrap/inherited_listener.h"
#include "bootstrap/kv_store.h"
#include "bootstrap/socket_io.h"
#include "common/error.h"

using namespace hvd;
using namespace hvd::bootstrap;

namespace {

const std::string kSecret = "0123456789abcdef-job-secret";
const std::string kLoopback = "127.0.0.1";
constexpr int64_t kTimeoutMs = 10000;

bool is_open(int fd) {
    return fcntl(fd, F_GETFD) >= 0;
}

// Anything but a listening socket on the given port is refused, and stays open: the number
// may have come from somewhere else.
void test_refuses_what_is_not_the_port(void **) {
    assert_false(take_inherited_listener(nullptr, 1234).valid());
    assert_false(take_inherited_listener("", 1234).valid());
    assert_false(take_inherited_listener("x7", 1234).valid());
    assert_false(take_inherited_listener("-3", 1234).valid());
    assert_false(take_inherited_listener("99999999999", 1234).valid());
    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    std::string text = std::to_string(pipe_fds[0]);
    assert_false(take_inherited_listener(text.c_str(), 1234).valid());
    assert_true(is_open(pipe_fds[0]));
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    Fd other = listen_tcp(kLoopback, 0);
    int port = bound_port(other.get());
    text = std::to_string(other.get());
    assert_false(take_inherited_listener(text.c_str(), port == 65535 ? 1 : port + 1).valid());
    assert_true(is_open(other.get()));
}

// Serves one client of `port` on `listener`, the client connecting `delay_ms` before the
// server starts.
void serve_one(Fd listener, int port, int delay_ms) {
    hvd_status_t client_status = HVD_OK;
    std::string got;
    std::thread client([&] {
        try {
            KvClient c(kLoopback, port, kSecret, 0, 1, Deadline::after_ms(kTimeoutMs));
            c.put("early", "bird");
            got = c.get("early", Deadline::after_ms(kTimeoutMs));
            c.bye();
        } catch (const Error &e) {
            client_status = e.status();
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    KvServer server(std::move(listener), kSecret, 1, kTimeoutMs);
    assert_int_equal(server.port(), port);
    client.join();
    assert_int_equal(client_status, HVD_OK);
    assert_string_equal(got.c_str(), "bird");
    assert_true(server.wait_finished(Deadline::after_ms(kTimeoutMs)));
}

// A client that connects while only the launcher's socket listens waits in its backlog and
// is served once rank 0's server takes the socket. Every later session gets the same socket,
// still listening after the first session's server closed its copy.
void test_serves_every_session_on_the_socket(void **) {
    Fd launcher = listen_tcp(kLoopback, 0);
    int port = bound_port(launcher.get());
    int flags = fcntl(launcher.get(), F_GETFL);
    fcntl(launcher.get(), F_SETFL, flags & ~O_NONBLOCK);  // as hvdrun passes it
    fcntl(launcher.get(), F_SETFD, 0);
    std::string text = std::to_string(launcher.get());
    Fd taken = take_inherited_listener(text.c_str(), port);
    assert_true(taken.valid());
    assert_int_not_equal(taken.get(), launcher.get());
    assert_true(fcntl(taken.get(), F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(launcher.get(), F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(taken.get(), F_GETFL) & O_NONBLOCK);
    int kept = launcher.release();  // the library's now
    serve_one(std::move(taken), port, 300);
    assert_true(is_open(kept));
    // Later sessions: whatever the variable says now, the kept socket is used.
    serve_one(take_inherited_listener("", port), port, 0);
    serve_one(take_inherited_listener(nullptr, port), port, 100);
    // A session on another port binds that one itself.
    assert_false(take_inherited_listener(text.c_str(), port == 65535 ? 1 : port + 1).valid());
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuses_what_is_not_the_port),
        cmocka_unit_test(test_serves_every_session_on_the_socket),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
