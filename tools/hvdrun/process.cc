// SPDX-License-Identifier: Apache-2.0
#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "output_relay.h"
#include "signals.h"

extern char **environ;

namespace hvdrun {
namespace {

struct Pipe {
    int read_end = -1;
    int write_end = -1;
};

// The pipes between hvdrun and one child. `in` exists only when the child gets stdin data.
struct ChildPipes {
    Pipe in, out, err;
    Pipe status;  // the child writes errno here if exec fails
};

// Close-on-exec on both ends, so no rank inherits another rank's pipes.
Pipe make_pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    return {fds[0], fds[1]};
}

void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

ChildPipes make_child_pipes(bool with_stdin) {
    ChildPipes p;
    try {
        if (with_stdin) p.in = make_pipe();
        p.out = make_pipe();
        p.err = make_pipe();
        p.status = make_pipe();
    } catch (...) {
        for (Pipe *q : {&p.in, &p.out, &p.err, &p.status}) {
            close_fd(&q->read_end);
            close_fd(&q->write_end);
        }
        throw;
    }
    return p;
}

std::vector<char *> c_strings(const std::vector<std::string> &words) {
    std::vector<char *> out;
    for (const std::string &w : words) {
        out.push_back(const_cast<char *>(w.c_str()));
    }
    out.push_back(nullptr);
    return out;
}

// hvdrun's own handlers (signals.cc) and its ignored SIGPIPE must not reach a rank: an ignored
// disposition survives exec, and a handler running between fork and exec would feed hvdrun's
// signal pipe. Called with all signals blocked; unblocks them to `mask`.
void reset_signals(const sigset_t &mask) {
    for (int sig : kCaughtSignals) {
        signal(sig, SIG_DFL);
    }
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &mask, nullptr);
}

// Runs in the forked child; never returns. Only redirects, resets and exec's.
[[noreturn]] void exec_child(char *const argv[], char *const envp[], const ChildPipes &p,
                             pid_t hvdrun_pid, const sigset_t &mask, const cpu_set_t *cpus) {
    // If hvdrun dies without its cleanup (SIGKILL), the rank still gets SIGTERM. Checking the
    // parent afterwards closes the window where hvdrun died before prctl.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != hvdrun_pid) _exit(127);
    reset_signals(mask);
    setpgid(0, 0);  // its own group, so kill(-pid) reaches everything the rank starts
    int input = p.in.read_end >= 0 ? p.in.read_end : open("/dev/null", O_RDONLY);
    if (input >= 0) dup2(input, STDIN_FILENO);
    dup2(p.out.write_end, STDOUT_FILENO);
    dup2(p.err.write_end, STDERR_FILENO);
    if (cpus != nullptr && sched_setaffinity(0, sizeof *cpus, cpus) != 0) {
        static const char kMsg[] =
            "hvdrun: --bind-to: cannot pin this rank to its CPUs; "
            "it runs unpinned\n";
        (void)!write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    }
    execvpe(argv[0], argv, envp);
    int code = errno;
    (void)!write(p.status.write_end, &code, sizeof(code));
    _exit(127);
}

// fork() with every signal blocked, so that no hvdrun handler runs in the child.
pid_t fork_child(char *const argv[], char *const envp[], const ChildPipes &p,
                 const cpu_set_t *cpus) {
    sigset_t all, saved;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &saved);
    pid_t hvdrun_pid = getpid();
    pid_t pid = fork();
    if (pid == 0) exec_child(argv, envp, p, hvdrun_pid, saved, cpus);
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &saved, nullptr);
    errno = fork_errno;
    return pid;
}

// The child reports a failed exec through the close-on-exec status pipe; EOF means exec
// succeeded.
int read_exec_errno(int fd) {
    pollfd pfd = {fd, POLLIN, 0};
    int ready;
    do {
        ready = poll(&pfd, 1, 10000);
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) return 0;  // still not exec'ed after 10 s: treat it as running
    int code = 0;
    ssize_t n;
    do {
        n = read(fd, &code, sizeof(code));
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(sizeof(code)) ? code : 0;
}

}  // namespace

SpawnedProcess spawn_process(const std::vector<std::string> &argv,
                             const std::vector<std::string> &envp, const std::string &stdin_data,
                             const std::vector<int> &cpus) {
    std::vector<char *> c_argv = c_strings(argv);
    // Made here: the child between fork and exec only calls async-signal-safe functions.
    cpu_set_t cpu_set;
    CPU_ZERO(&cpu_set);
    for (int c : cpus)
        if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpu_set);
    std::vector<char *> c_envp = c_strings(envp);
    ChildPipes p = make_child_pipes(!stdin_data.empty());
    pid_t pid = fork_child(c_argv.data(), c_envp.data(), p, cpus.empty() ? nullptr : &cpu_set);
    int fork_errno = errno;
    // The child's ends belong to the child alone.
    for (int *fd : {&p.in.read_end, &p.out.write_end, &p.err.write_end, &p.status.write_end}) {
        close_fd(fd);
    }
    if (pid < 0) {
        for (int *fd : {&p.in.write_end, &p.out.read_end, &p.err.read_end, &p.status.read_end}) {
            close_fd(fd);
        }
        throw std::runtime_error(std::string("fork: ") + std::strerror(fork_errno));
    }
    setpgid(pid, pid);  // also here: a signal sent right after we return must find the group
    if (p.in.write_end >= 0) {
        // Fits the empty pipe's buffer, so this does not block; EPIPE (exec failed) is ignored.
        (void)write_all(p.in.write_end, stdin_data.data(), stdin_data.size());
    }
    SpawnedProcess proc;
    proc.pid = pid;
    proc.in_fd = p.in.write_end;
    proc.out_fd = p.out.read_end;
    proc.err_fd = p.err.read_end;
    proc.exec_errno = read_exec_errno(p.status.read_end);
    close_fd(&p.status.read_end);
    fcntl(proc.out_fd, F_SETFL, O_NONBLOCK);
    fcntl(proc.err_fd, F_SETFL, O_NONBLOCK);
    return proc;
}

std::vector<std::string> merged_environment(const std::vector<EnvVar> &overrides) {
    std::vector<std::string> env;
    for (char **e = environ; *e != nullptr; ++e) {
        std::string entry = *e;
        std::string name = entry.substr(0, entry.find('='));
        bool replaced = false;
        for (const EnvVar &o : overrides) {
            replaced = replaced || o.first == name;
        }
        if (!replaced) env.push_back(entry);
    }
    // Of several overrides of one name the last wins, as with `env A=1 A=2` on a remote host.
    for (size_t i = 0; i < overrides.size(); ++i) {
        bool superseded = false;
        for (size_t j = i + 1; j < overrides.size(); ++j) {
            superseded = superseded || overrides[j].first == overrides[i].first;
        }
        if (!superseded) env.push_back(overrides[i].first + "=" + overrides[i].second);
    }
    return env;
}

}  // namespace hvdrun
