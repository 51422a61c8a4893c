// The single-host rendezvous file: naming, round trip, permissions, atomic replacement,
// polling for a late writer, timeouts, and refusal of a file others could have written.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/rendezvous_file.h"
#include "bootstrap/sha256.h"
#include "common/error.h"

using namespace hvd;
using namespace hvd::bootstrap;

namespace {

std::string g_dir;

int setup(void **) {
    char tmpl[] = "/tmp/hvd-rdv-test-XXXXXX";
    if (!mkdtemp(tmpl)) return -1;
    g_dir = tmpl;
    return setenv("TMPDIR", g_dir.c_str(), 1);
}

int teardown(void **) {
    DIR *d = opendir(g_dir.c_str());
    while (dirent *e = d ? readdir(d) : nullptr)
        if (e->d_name[0] != '.') unlink((g_dir + "/" + e->d_name).c_str());
    if (d) closedir(d);
    return rmdir(g_dir.c_str());
}

int64_t ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t0)
        .count();
}

int count_dir_entries() {
    int n = 0;
    DIR *d = opendir(g_dir.c_str());
    while (dirent *e = d ? readdir(d) : nullptr)
        n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

void test_path(void **) {
    std::string prefix = g_dir + "/hvd-rdv-" + std::to_string(getuid()) + "-";
    assert_string_equal(rendezvous_file_path("job-1.2_x").c_str(), (prefix + "job-1.2_x").c_str());
    // Unsafe characters are replaced and a hash keeps "a/b" and "a_b" apart.
    std::string slashed = rendezvous_file_path("a/b c");
    assert_string_equal(slashed.c_str(),
                        (prefix + "a_b_c-" + sha256_hex("a/b c").substr(0, 16)).c_str());
    assert_string_not_equal(rendezvous_file_path("a/b").c_str(),
                            rendezvous_file_path("a_b").c_str());
    std::string long_id(200, 'z');
    std::string p = rendezvous_file_path(long_id);
    assert_true(p.size() < prefix.size() + 64);
    assert_string_not_equal(p.c_str(), rendezvous_file_path(long_id + "z").c_str());
}

void test_round_trip_and_permissions(void **) {
    publish_rendezvous("rt", {"node3", 41000, "abcdef0123"});
    RendezvousEndpoint ep = lookup_rendezvous("rt", Deadline::after_ms(1000));
    assert_string_equal(ep.addr.c_str(), "node3");
    assert_int_equal(ep.port, 41000);
    assert_string_equal(ep.secret.c_str(), "abcdef0123");

    struct stat st {};
    assert_int_equal(stat(rendezvous_file_path("rt").c_str(), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_uid, getuid());
    assert_int_equal(count_dir_entries(), 1);  // no temp file left behind

    remove_rendezvous("rt");
    assert_int_equal(count_dir_entries(), 0);
    remove_rendezvous("rt");  // absent: no error
}

void test_replace_stale(void **) {
    publish_rendezvous("stale", {"old", 1, "s1"});
    publish_rendezvous("stale", {"new", 2, "s2"});
    RendezvousEndpoint ep = lookup_rendezvous("stale", Deadline::after_ms(1000));
    assert_string_equal(ep.addr.c_str(), "new");
    assert_int_equal(ep.port, 2);
    assert_string_equal(ep.secret.c_str(), "s2");
    remove_rendezvous("stale");
}

// A reader that starts first polls until the writer publishes.
void test_lookup_waits_for_late_publish(void **) {
    std::thread writer([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        publish_rendezvous("late", {"127.0.0.1", 5555, "deadbeef"});
    });
    auto t0 = std::chrono::steady_clock::now();
    RendezvousEndpoint ep = lookup_rendezvous("late", Deadline::after_ms(5000));
    int64_t waited = ms_since(t0);
    writer.join();
    assert_int_equal(ep.port, 5555);
    assert_true(waited >= 100 && waited < 4000);
    remove_rendezvous("late");
}

hvd_status_t lookup_status(const std::string &job, int64_t timeout_ms, std::string *msg) {
    try {
        lookup_rendezvous(job, Deadline::after_ms(timeout_ms));
        return HVD_OK;
    } catch (const Error &e) {
        *msg = e.what();
        return e.status();
    }
}

void test_lookup_timeout(void **) {
    std::string msg;
    auto t0 = std::chrono::steady_clock::now();
    assert_int_equal(lookup_status("absent", 100, &msg), HVD_ERR_TIMED_OUT);
    int64_t waited = ms_since(t0);
    assert_true(waited >= 100 && waited < 2000);
    assert_non_null(strstr(msg.c_str(), rendezvous_file_path("absent").c_str()));
}

// A file readable by others (or planted by someone else) is never trusted.
void test_rejects_public_file(void **) {
    std::string path = rendezvous_file_path("public");
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    fchmod(fd, 0644);
    const char line[] = "evil 1234 s\n";
    assert_int_equal(write(fd, line, sizeof line - 1), sizeof line - 1);
    close(fd);
    std::string msg;
    assert_int_equal(lookup_status("public", 100, &msg), HVD_ERR_TIMED_OUT);
    remove_rendezvous("public");
}

void test_publish_rejects_bad_endpoint(void **) {
    for (const RendezvousEndpoint &ep :
         {RendezvousEndpoint{"", 1, "s"}, RendezvousEndpoint{"h", 0, "s"},
          RendezvousEndpoint{"h", 70000, "s"}, RendezvousEndpoint{"h h", 1, "s"},
          RendezvousEndpoint{"h", 1, ""}}) {
        try {
            publish_rendezvous("bad", ep);
            fail_msg("publish accepted addr '%s' port %d", ep.addr.c_str(), ep.port);
        } catch (const Error &e) {
            assert_int_equal(e.status(), HVD_ERR_INVALID_ARG);
        }
    }
    assert_int_equal(count_dir_entries(), 0);
}

}  // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_round_trip_and_permissions),
        cmocka_unit_test(test_replace_stale),
        cmocka_unit_test(test_lookup_waits_for_late_publish),
        cmocka_unit_test(test_lookup_timeout),
        cmocka_unit_test(test_rejects_public_file),
        cmocka_unit_test(test_publish_rejects_bad_endpoint),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
