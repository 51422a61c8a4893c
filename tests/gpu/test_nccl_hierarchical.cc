// SPDX-License-Identifier: Apache-2.0
// The hierarchical allreduce and allgather of CUDA tensors (HVD_HIERARCHICAL_ALLREDUCE=1,
// HVD_HIERARCHICAL_ALLGATHER=1) where no GPU is: a job of several "hosts", each a process of its
// own (HVD_HOSTNAME) whose ranks run as threads on the devices of the test module
// (fake_gpu_device.cc, whose NCCL joins the threads of one process). NCCL thus runs only within a
// host, which is all the hierarchical collectives ask of it: a flat NCCL collective across hosts
// would never complete here. Layouts: hosts of equal size (every local rank holds a share), a host
// of one rank (one share; ranks without a share), ranks of a host apart, hosts of different sizes,
// hosts of three, three hosts. On each, every NCCL dtype x op against references computed here,
// prescale and postscale, element counts below the number of shares, even and uneven shares, a
// fused run, a run large enough to cross hosts in chunks, and an op ordered on the caller's stream;
// allgathers of ragged rows (some ranks with none), fused, into library-owned and caller's outputs,
// in place, large, on the caller's stream, and a grouped one of two tensors whose rows differ (a
// host without rows). Each host checks that NCCL ran there (where it has two ranks) and that its
// ranks staged through pinned memory; and a host that dies while the other's holders wait for its
// shares makes their ops fail, not hang.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_device_job.h"

extern char **environ;

namespace {

using namespace fake_device_job;

// ------------------------------------------------------------------ what each rank runs

// Float32 allreduces of `counts` elements each, averaged, in place: one grouped allreduce (one
// fused run), or each alone, waited for before the next.
std::string averaged_sizes(Rank &me, const std::vector<int64_t> &counts, const std::string &tag,
                           bool grouped) {
    std::vector<std::unique_ptr<DeviceArray>> xs;
    std::vector<hvd_tensor_t> ts(counts.size());
    std::vector<const hvd_tensor_t *> pts(counts.size());
    for (size_t k = 0; k < counts.size(); ++k) {
        xs.push_back(std::make_unique<DeviceArray>(me.device, HVD_DTYPE_FLOAT32,
                                                   std::vector<int64_t>{counts[k]}));
        for (size_t i = 0; i < xs[k]->count; ++i)
            store(HVD_DTYPE_FLOAT32, xs[k]->data, i,
                  value(HVD_DTYPE_FLOAT32, HVD_OP_SUM, me.rank, i, static_cast<int>(k)));
        ts[k] = xs[k]->tensor();
        pts[k] = &ts[k];
    }
    auto check = [&](size_t k) {
        const std::string what = tag + " allreduce " + std::to_string(k) + " of " +
                                 std::to_string(counts[k]) + " elements";
        return compare(what, HVD_DTYPE_FLOAT32, xs[k]->data, xs[k]->count, [&](size_t i) {
            return reference(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, me.size, i, 1.0, 1.0,
                             static_cast<int>(k));
        });
    };
    Params p(tag);
    p.field_mask |= HVD_OP_FIELD_REDUCE_OP;
    p.reduce_op = HVD_OP_AVERAGE;
    hvd_request_h req;
    if (grouped) {
        const int32_t n = static_cast<int32_t>(counts.size());
        if (hvd_grouped_allreduce_enqueue(me.ctx, pts.data(), pts.data(), n, &p, &req) != HVD_OK)
            return enqueue_failed(tag);
        std::string err = finish(req, tag + " grouped allreduce");
        for (size_t k = 0; err.empty() && k < counts.size(); ++k)
            err = check(k);
        return err;
    }
    for (size_t k = 0; k < counts.size(); ++k) {
        p.rename(tag + "." + std::to_string(k));
        if (hvd_allreduce_enqueue(me.ctx, &ts[k], &ts[k], &p, &req) != HVD_OK)
            return enqueue_failed(p.label);
        std::string err = finish(req, p.label);
        if (err.empty()) err = check(k);
        if (!err.empty()) return err;
    }
    return "";
}

// An allreduce ordered on the caller's stream behind work there that holds it for a while (a
// gate), its input written behind that work, read back on the stream: right only if the
// library's work waited for the stream and the stream for it.
std::string on_callers_stream(Rank &me) {
    CallerStream s(me.device);
    DeviceArray x(me.device, HVD_DTYPE_INT32, {1001});
    std::vector<int32_t> pattern(x.count), back(x.count, -1);
    for (size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = static_cast<int32_t>(me.rank * 1000 + i);
    int open = 0;
    g_gate(me.device, s.stream, &open);
    s.copy(x.data, pattern.data(), x.count * sizeof(int32_t));
    Params p("stream.ar");
    p.field_mask |= HVD_OP_FIELD_STREAM;
    p.stream = s.stream;
    hvd_tensor_t t = x.tensor();
    hvd_request_h req;
    const hvd_status_t enqueued = hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req);
    usleep(200000);
    __atomic_store_n(&open, 1, __ATOMIC_RELEASE);
    if (enqueued != HVD_OK) return enqueue_failed("stream.ar");
    std::string err = finish(req, "allreduce on the caller's stream");
    s.copy(back.data(), x.data, x.count * sizeof(int32_t));
    if (!s.sync()) return "the caller's stream did not finish";
    if (!err.empty()) return err;
    const int64_t base = 1000LL * me.size * (me.size - 1) / 2;
    for (size_t i = 0; i < back.size(); ++i)
        if (back[i] != base + me.size * static_cast<int64_t>(i))
            return "allreduce on the stream: element " + std::to_string(i) + " is " +
                   std::to_string(back[i]);
    return "";
}

std::string every_case(Rank &me) {
    std::string err = allreduce_everything(
        me, std::vector<int32_t>(std::begin(kNcclDtypes), std::end(kNcclDtypes)));
    // Alone: one element (fewer than the shares where hosts run two ranks), an even count, a
    // tensor whose shares cross hosts in chunks (10 MiB); then one fused run of five.
    if (err.empty()) err = averaged_sizes(me, {1, 2 * 3 * 4 * 5, 10 << 18}, "alone", false);
    if (err.empty()) err = averaged_sizes(me, {1, 2, 64, 1000, 4097}, "fused", true);
    if (err.empty()) err = on_callers_stream(me);
    if (err.empty()) err = allgathers(me);  // ragged and even rows, into library-owned outputs
    if (err.empty()) err = allgathers_into(me, 4);  // 40 MiB or more: five chunks or more
    if (err.empty()) err = grouped_allgather(me);
    return err;
}

// An allreduce ordered on a caller's stream that never runs its work (a gate never opened):
// the op is agreed with the other ranks, but this rank's device never reaches it.
std::string stalled_allreduce(Rank &me) {
    static int closed = 0;
    // Left to the process's end, which comes while the op waits on them.
    DeviceArray *x = new DeviceArray(me.device, HVD_DTYPE_FLOAT32, {1000});
    CallerStream *s = new CallerStream(me.device);
    g_gate(me.device, s->stream, &closed);
    Params p("after");
    p.field_mask |= HVD_OP_FIELD_STREAM;
    p.stream = s->stream;
    hvd_tensor_t t = x->tensor();
    hvd_request_h req;
    if (hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req) != HVD_OK) return enqueue_failed("after");
    return "";
}

// ------------------------------------------------------------------ one host's process

// Runs `body` on each of `ranks` of a job of `size` ranks, as threads of this process, the
// i-th of them on device i; finalizes each context where `finalize`. Returns each rank's "" or
// what failed.
std::vector<std::string> run_ranks(const std::vector<int32_t> &ranks, int32_t size,
                                   const hvd_unique_id_t &id, bool finalize,
                                   const std::function<std::string(Rank &)> &body) {
    std::vector<std::string> errors(ranks.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ranks.size(); ++i)
        threads.emplace_back([&, i] {
            Rank me;
            me.rank = ranks[i];
            me.size = size;
            me.device = static_cast<int32_t>(i);
            if (inprocess_job::join_job(id, me.rank, size, &me.ctx) != HVD_OK) {
                errors[i] = "init";
                return;
            }
            errors[i] = body(me);
            if (finalize) hvd_finalize(me.ctx);
        });
    for (std::thread &t : threads)
        t.join();
    return errors;
}

// Runs the ranks of `layout` (one host letter per rank) on host `host`, as threads of this
// process, device i for its i-th rank. `dies`: this host's ranks finish one allreduce, start
// another that their devices never reach, and the process ends without a word (the other
// hosts' ranks must then fail). Returns the exit code.
int run_host(const std::string &layout, char host, const hvd_unique_id_t &id, bool dies) {
    std::vector<int32_t> mine;
    for (size_t r = 0; r < layout.size(); ++r)
        if (layout[r] == host) mine.push_back(static_cast<int32_t>(r));
    const int32_t size = static_cast<int32_t>(layout.size());
    g_layout = layout;
    const uint64_t rounds = g_rounds(), pinned = g_pinned_allocs();
    // Copies of a chunk take a while: work that does not wait for them reads too early.
    g_slow_copies(5000);
    // Dying, the ranks do not finalize: the process ends below.
    const std::vector<std::string> errors =
        dies ? run_ranks(mine, size, id, false,
                         [](Rank &me) {
                             std::string err = averaged_sizes(me, {100}, "before", false);
                             return err.empty() ? stalled_allreduce(me) : err;
                         })
             : run_ranks(mine, size, id, true, every_case);
    if (dies) {  // a while after, so that the other hosts' holders wait for this one's shares
        for (const std::string &e : errors)
            if (!e.empty()) std::fprintf(stderr, "host %c: %s\n", host, e.c_str());
        std::fflush(stderr);
        sleep(1);
        _exit(errors[0].empty() && errors.back().empty() ? 0 : 1);
    }
    int code = 0;
    for (size_t i = 0; i < mine.size(); ++i)
        if (!errors[i].empty()) {
            std::fprintf(stderr, "layout %s, rank %d: %s\n", layout.c_str(), mine[i],
                         errors[i].c_str());
            code = 1;
        }
    if (mine.size() > 1 && g_rounds() == rounds) {
        std::fprintf(stderr, "layout %s, host %c: NCCL did not run within the host\n",
                     layout.c_str(), host);
        code = 1;
    }
    if (mine.size() == 1 && g_rounds() != rounds) {
        std::fprintf(stderr, "layout %s, host %c: NCCL ran for a host of one rank\n",
                     layout.c_str(), host);
        code = 1;
    }
    if (g_pinned_allocs() == pinned) {
        std::fprintf(stderr, "layout %s, host %c: no share crossed hosts through host memory\n",
                     layout.c_str(), host);
        code = 1;
    }
    char misuses[4096];
    if (g_misuses(misuses, sizeof misuses) != 0) {
        std::fprintf(stderr, "layout %s, host %c: device work on freed memory:\n%s\n",
                     layout.c_str(), host, misuses);
        code = 1;
    }
    return code;
}

std::string to_hex(const hvd_unique_id_t &id) {
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (char c : id.internal) {
        hex += digits[(static_cast<unsigned char>(c) >> 4) & 0xf];
        hex += digits[static_cast<unsigned char>(c) & 0xf];
    }
    return hex;
}

bool from_hex(const std::string &hex, hvd_unique_id_t *id) {
    if (hex.size() != 2 * sizeof id->internal) return false;
    for (size_t i = 0; i < sizeof id->internal; ++i)
        id->internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    return true;
}

// ------------------------------------------------------------------ the job

// Starts this program for host `host` of the job (HVD_HOSTNAME=host); its pid, -1 on failure.
pid_t spawn_host(const std::string &layout, char host, const std::string &id_hex, bool dies) {
    std::vector<std::string> env;
    for (char **e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "HVD_HOSTNAME=", 13) != 0) env.emplace_back(*e);
    env.push_back(std::string("HVD_HOSTNAME=") + host);
    std::vector<std::string> args = {"test_nccl_hierarchical", "--host", layout,
                                     std::string(1, host),     id_hex,   dies ? "dies" : "lives"};
    std::vector<char *> argv, envp;
    for (std::string &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string &e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0)
        return -1;
    return pid;
}

// The processes of a job's other hosts: each waited for (bounded), and any still running when
// the test ends (a failure on the way) killed, so none outlives its test.
class Children {
  public:
    Children() = default;
    Children(const Children &) = delete;
    Children &operator=(const Children &) = delete;
    ~Children() {
        for (pid_t pid : pids_)
            if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, nullptr, 0);
            }
    }
    void add(pid_t pid) {
        if (pid < 0) fail_msg("cannot start a host's process");
        pids_.push_back(pid);
    }
    size_t size() const { return pids_.size(); }
    // Waits up to `seconds` for child i; its exit code, or -1 (killed) when it did not end in
    // time.
    int wait(size_t i, int seconds) {
        const pid_t pid = pids_[i];
        pids_[i] = -1;
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        for (;;) {
            int status = 0;
            if (waitpid(pid, &status, WNOHANG) == pid)
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            if (std::chrono::steady_clock::now() > end) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                return -1;
            }
            usleep(20000);
        }
    }

  private:
    std::vector<pid_t> pids_;
};

// Runs a job of `layout`: host 'a' in this process, every other host in a process of its own.
void run_layout(const std::string &layout) {
    hvd_unique_id_t id;
    assert_int_equal(hvd_get_unique_id(&id), HVD_OK);
    const std::string hex = to_hex(id);
    std::string hosts;
    Children children;
    for (char host : layout)
        if (host != 'a' && hosts.find(host) == std::string::npos) {
            hosts += host;
            children.add(spawn_host(layout, host, hex, false));
        }
    const int code = run_host(layout, 'a', id, false);
    for (size_t i = 0; i < children.size(); ++i) {
        const int other = children.wait(i, 120);
        if (other != 0)
            fail_msg("layout %s: host %c exited with %d", layout.c_str(), hosts[i], other);
    }
    if (code != 0) fail_msg("layout %s: host a failed (above)", layout.c_str());
}

void test_two_hosts_of_two(void **) {
    run_layout("aabb");
}
void test_a_host_of_one(void **) {
    run_layout("aab");
}
void test_hosts_apart(void **) {
    run_layout("abab");
}
void test_hosts_of_different_sizes(void **) {
    run_layout("aaabb");
}
void test_hosts_of_three(void **) {
    run_layout("aaabbb");
}
void test_three_hosts(void **) {
    run_layout("abcabc");
}

// Host b's ranks finish one allreduce, start the next one that their devices never reach,
// and their process ends while host a's holders wait for b's shares across hosts: host a's
// ranks fail within seconds, and none hangs.
void test_a_host_dies(void **) {
    hvd_unique_id_t id;
    assert_int_equal(hvd_get_unique_id(&id), HVD_OK);
    Children children;
    children.add(spawn_host("aabb", 'b', to_hex(id), true));
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> errors = run_ranks({0, 1}, 4, id, true, [](Rank &me) {
        std::string err = averaged_sizes(me, {100}, "before", false);
        if (!err.empty()) return err;
        DeviceArray x(me.device, HVD_DTYPE_FLOAT32, {1000});
        Params p("after");
        hvd_tensor_t t = x.tensor();
        hvd_request_h req;
        if (hvd_allreduce_enqueue(me.ctx, &t, &t, &p, &req) == HVD_OK &&
            finish(req, "after").empty())
            return std::string("the allreduce without host b succeeded");
        return std::string();
    });
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int code = children.wait(0, 30);
    for (int32_t r = 0; r < 2; ++r)
        if (!errors[r].empty()) fail_msg("rank %d: %s", r, errors[r].c_str());
    if (code != 0) fail_msg("host b exited with %d before it was meant to end", code);
    if (took > 20) fail_msg("the failure took %.0f s", took);
}

}  // namespace

int main(int argc, char **argv) {
    if (!load_fake_device(HVD_FAKE_GPU_DEVICE)) return 1;
    setenv("HVD_HIERARCHICAL_ALLREDUCE", "1", 1);
    setenv("HVD_HIERARCHICAL_ALLGATHER", "1", 1);
    if (argc == 6 && std::strcmp(argv[1], "--host") == 0) {
        hvd_unique_id_t id;
        if (!from_hex(argv[4], &id)) return 2;
        return run_host(argv[2], argv[3][0], id, std::strcmp(argv[5], "dies") == 0);
    }
    setenv("HVD_HOSTNAME", "a", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_hosts_of_two), cmocka_unit_test(test_a_host_of_one),
        cmocka_unit_test(test_hosts_apart),      cmocka_unit_test(test_hosts_of_different_sizes),
        cmocka_unit_test(test_hosts_of_three),   cmocka_unit_test(test_three_hosts),
        cmocka_unit_test(test_a_host_dies),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
