// SPDX-License-Identifier: Apache-2.0
// The single-host rendezvous file: naming, round trip, permissions, atomic replacement,
// polling for a late writer, timeouts, refusal of a file others could have written, and the
// private directory it lives in: $XDG_RUNTIME_DIR or $TMPDIR/hvd-<uid>, never a directory
// that is a link, another user's or open to others, never a file through a planted link.
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
#include <ftw.h>
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

// Where the files go when nothing is in the way: $TMPDIR/hvd-<uid>.
std::string private_dir() {
    return g_dir + "/hvd-" + std::to_string(getuid());
}

int setup(void **) {
    char tmpl[] = "/tmp/hvd-rdv-test-XXXXXX";
    if (!mkdtemp(tmpl)) return -1;
    g_dir = tmpl;
    unsetenv("XDG_RUNTIME_DIR");
    return setenv("TMPDIR", g_dir.c_str(), 1);
}

int remove_entry(const char *path, const struct stat *, int, struct FTW *) {
    return remove(path);
}

// Empties g_dir (links removed, never followed), keeping it.
int empty_dir(void ** = nullptr) {
    DIR *d = opendir(g_dir.c_str());
    while (dirent *e = d ? readdir(d) : nullptr) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        std::string path = g_dir + "/" + name;
        chmod(path.c_str(), 0700);
        nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (d) closedir(d);
    return 0;
}

int teardown(void **) {
    empty_dir();
    return rmdir(g_dir.c_str());
}

int64_t ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t0)
        .count();
}

int count_dir_entries(const std::string &dir = private_dir()) {
    int n = 0;
    DIR *d = opendir(dir.c_str());
    while (dirent *e = d ? readdir(d) : nullptr)
        n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

void test_path(void **) {
    std::string prefix = private_dir() + "/hvd-rdv-";
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
    assert_int_equal(lstat(private_dir().c_str(), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(st.st_uid, getuid());

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

// A round trip through the rendezvous file of `job`, which must be in `dir`.
void assert_round_trip_in(const std::string &dir, const std::string &job) {
    assert_string_equal(rendezvous_file_path(job).c_str(), (dir + "/hvd-rdv-" + job).c_str());
    publish_rendezvous(job, {"127.0.0.1", 4242, "cafe"});
    struct stat st {};
    assert_int_equal(lstat((dir + "/hvd-rdv-" + job).c_str(), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    RendezvousEndpoint ep = lookup_rendezvous(job, Deadline::after_ms(1000));
    assert_int_equal(ep.port, 4242);
    remove_rendezvous(job);
}

// A directory at $TMPDIR/hvd-<uid> that group or others may write (planted by another user, or
// left so): never used; the files go to the next candidate, hvd-<uid>.1.
void test_skips_directory_open_to_others(void **) {
    empty_dir();
    assert_int_equal(mkdir(private_dir().c_str(), 0700), 0);
    assert_int_equal(chmod(private_dir().c_str(), 0777), 0);
    assert_round_trip_in(private_dir() + ".1", "open");
    assert_int_equal(count_dir_entries(private_dir()), 0);
    empty_dir();
}

// Another user's directory at $TMPDIR/hvd-<uid>, even a 0700 one: never used.
void test_skips_directory_of_another_user(void **) {
    empty_dir();
    if (getuid() != 0) skip();  // only root can give a directory away
    assert_int_equal(mkdir(private_dir().c_str(), 0700), 0);
    assert_int_equal(chown(private_dir().c_str(), 65534, 65534), 0);
    assert_round_trip_in(private_dir() + ".1", "foreign");
    empty_dir();
}

// A link at $TMPDIR/hvd-<uid>, even to a private directory of this user's: never followed.
void test_skips_directory_link(void **) {
    empty_dir();
    std::string target = g_dir + "/elsewhere";
    assert_int_equal(mkdir(target.c_str(), 0700), 0);
    assert_int_equal(symlink(target.c_str(), private_dir().c_str()), 0);
    assert_round_trip_in(private_dir() + ".1", "linked");
    assert_int_equal(count_dir_entries(target), 0);
    empty_dir();
}

// Every candidate refused: a clear error naming them, before anything is written.
void test_no_private_directory(void **) {
    empty_dir();
    for (int k = 0; k < 8; ++k) {
        std::string dir = private_dir() + (k ? "." + std::to_string(k) : "");
        assert_int_equal(mkdir(dir.c_str(), 0700), 0);
        assert_int_equal(chmod(dir.c_str(), 0777), 0);
    }
    for (int op = 0; op < 3; ++op) {
        try {
            if (op == 0) publish_rendezvous("none", {"127.0.0.1", 1, "s"});
            if (op == 1) lookup_rendezvous("none", Deadline::after_ms(100));
            if (op == 2) rendezvous_file_path("none");
            fail_msg("operation %d found a private directory", op);
        } catch (const Error &e) {
            assert_int_equal(e.status(), HVD_ERR_TRANSPORT);
            std::string msg = e.what();
            assert_non_null(strstr(msg.c_str(), "no private directory"));
            assert_non_null(strstr(msg.c_str(), (private_dir() + ": mode 777").c_str()));
            assert_non_null(strstr(msg.c_str(), (private_dir() + ".7: mode 777").c_str()));
        }
    }
    remove_rendezvous("none");  // never throws
    assert_int_equal(count_dir_entries(private_dir()), 0);
    empty_dir();
}

// TMPDIR names no directory: one clear error, not eight.
void test_missing_tmpdir(void **) {
    empty_dir();
    std::string absent = g_dir + "/absent";
    setenv("TMPDIR", absent.c_str(), 1);
    try {
        publish_rendezvous("x", {"127.0.0.1", 1, "s"});
        fail_msg("published under a missing TMPDIR");
    } catch (const Error &e) {
        std::string msg = e.what();
        setenv("TMPDIR", g_dir.c_str(), 1);
        assert_int_equal(e.status(), HVD_ERR_TRANSPORT);
        std::string want =
            "(" + absent + "/hvd-" + std::to_string(getuid()) + ": No such file or directory);";
        assert_non_null(strstr(msg.c_str(), want.c_str()));
    }
    setenv("TMPDIR", g_dir.c_str(), 1);
}

// A link planted at the file's own path: the reader does not follow it, and publishing
// replaces the link without writing through it.
void test_link_at_file_path(void **) {
    empty_dir();
    publish_rendezvous("real", {"127.0.0.1", 7777, "s"});  // a valid file to point at
    std::string link = private_dir() + "/hvd-rdv-planted";
    assert_int_equal(symlink(rendezvous_file_path("real").c_str(), link.c_str()), 0);
    std::string msg;
    assert_int_equal(lookup_status("planted", 100, &msg), HVD_ERR_TIMED_OUT);
    publish_rendezvous("planted", {"127.0.0.1", 8888, "t"});
    struct stat st {};
    assert_int_equal(lstat(link.c_str(), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(lookup_rendezvous("planted", Deadline::after_ms(1000)).port, 8888);
    assert_int_equal(lookup_rendezvous("real", Deadline::after_ms(1000)).port, 7777);
    empty_dir();
}

// $XDG_RUNTIME_DIR when it is private; else $TMPDIR's directory.
void test_xdg_runtime_dir(void **) {
    empty_dir();
    std::string xdg = g_dir + "/run";
    assert_int_equal(mkdir(xdg.c_str(), 0700), 0);
    setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);
    assert_round_trip_in(xdg, "xdg");
    assert_int_equal(chmod(xdg.c_str(), 0755), 0);
    assert_round_trip_in(private_dir(), "xdg");
    setenv("XDG_RUNTIME_DIR", "relative/dir", 1);
    assert_round_trip_in(private_dir(), "xdg");
    unsetenv("XDG_RUNTIME_DIR");
    empty_dir();
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
        cmocka_unit_test(test_skips_directory_open_to_others),
        cmocka_unit_test(test_skips_directory_of_another_user),
        cmocka_unit_test(test_skips_directory_link),
        cmocka_unit_test(test_no_private_directory),
        cmocka_unit_test(test_missing_tmpdir),
        cmocka_unit_test(test_link_at_file_path),
        cmocka_unit_test(test_xdg_runtime_dir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
