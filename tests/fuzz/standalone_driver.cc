// SPDX-License-Identifier: Apache-2.0
// Runs a fuzz target (LLVMFuzzerTestOneInput) without libFuzzer, for builds with gcc:
//   fuzz_<target> [-seed=N] [-max_len=N] [-artifact_dir=DIR] SECONDS PATH...
// Replays every file of the PATHs (a directory's files, or one file: a crash to reproduce),
// then, for SECONDS, runs random mutations of them: bit flips, random bytes, byte inserts and
// deletes, duplicated or spliced ranges, interesting integers. No coverage feedback: the
// mutations explore around the seeds. The seed of the random generator is printed, so a run
// can be repeated. An input that crashes (a sanitizer report, a signal, an uncaught
// exception) or runs longer than the per-input bound is written to
// DIR/crash-<target>-<hash> before the process dies, and the path printed.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define HVD_FUZZ_DEATH_CALLBACK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HVD_FUZZ_DEATH_CALLBACK 1
#endif
#endif
#ifdef HVD_FUZZ_DEATH_CALLBACK
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

constexpr unsigned kInputTimeoutS = 60;  // one input running longer hangs

using Bytes = std::vector<uint8_t>;

// The input being run, for the crash handlers (which may only use async-signal-safe calls).
const Bytes *g_current = nullptr;
char g_crash_path[4096];
const char *g_target = "fuzz";

uint64_t fnv1a(const Bytes &b) {
    uint64_t h = 1469598103934665603ULL;
    for (uint8_t c : b)
        h = (h ^ c) * 1099511628211ULL;
    return h;
}

void write_str(const char *s) {
    ssize_t ignored = ::write(2, s, std::strlen(s));
    (void)ignored;
}

// Saves the current input; g_crash_path was prepared before the input ran.
void save_current() {
    static volatile sig_atomic_t saved = 0;
    if (saved || g_current == nullptr) return;
    saved = 1;
    int fd = ::open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t ignored = ::write(fd, g_current->data(), g_current->size());
        (void)ignored;
        ::close(fd);
        write_str("== fuzz: the failing input is saved in ");
        write_str(g_crash_path);
        write_str("\n");
    }
}

void on_signal(int sig) {
    if (sig == SIGALRM) write_str("== fuzz: an input ran past the per-input bound (a hang)\n");
    save_current();
    ::signal(sig, SIG_DFL);
    if (sig == SIGALRM) sig = SIGABRT;
    ::raise(sig);
}

void install_handlers() {
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM})
        ::signal(sig, on_signal);
#ifdef HVD_FUZZ_DEATH_CALLBACK
    __sanitizer_set_death_callback(save_current);
#endif
}

void run(const Bytes &input, const std::string &artifact_dir) {
    g_current = &input;
    std::snprintf(g_crash_path, sizeof g_crash_path, "%s/crash-%s-%016llx", artifact_dir.c_str(),
                  g_target, static_cast<unsigned long long>(fnv1a(input)));
    ::alarm(kInputTimeoutS);
    // A copy of exactly input.size() bytes, so reads past the end are caught.
    std::unique_ptr<uint8_t[]> copy(new uint8_t[input.size() ? input.size() : 1]);
    if (!input.empty()) std::memcpy(copy.get(), input.data(), input.size());
    LLVMFuzzerTestOneInput(copy.get(), input.size());
    ::alarm(0);
    g_current = nullptr;
}

bool read_file(const std::string &path, Bytes *out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return true;
}

// The files of a directory (sorted), or the path itself when it is a file.
std::vector<std::string> list_inputs(const std::string &path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "fuzz: %s: %s\n", path.c_str(), std::strerror(errno));
        std::exit(2);
    }
    if (!S_ISDIR(st.st_mode)) return {path};
    std::vector<std::string> files;
    if (DIR *d = ::opendir(path.c_str())) {
        while (dirent *e = ::readdir(d))
            if (e->d_name[0] != '.') files.push_back(path + "/" + e->d_name);
        ::closedir(d);
    }
    std::sort(files.begin(), files.end());
    return files;
}

class Mutator {
  public:
    Mutator(uint64_t seed, size_t max_len) : rng_(seed), max_len_(max_len) {}

    Bytes mutate(const std::vector<Bytes> &corpus) {
        Bytes b = corpus[pick(corpus.size())];
        int rounds = 1 + static_cast<int>(pick(5));
        for (int i = 0; i < rounds; ++i)
            once(b, corpus);
        if (b.size() > max_len_) b.resize(max_len_);
        return b;
    }

  private:
    size_t pick(size_t n) { return n ? static_cast<size_t>(rng_() % n) : 0; }

    void once(Bytes &b, const std::vector<Bytes> &corpus) {
        static const int64_t kInteresting[] = {
            0,         1,         -1,         2,         4,
            8,         16,        32,         64,        100,
            127,       128,       255,        256,       1024,
            4096,      32767,     32768,      65535,     65536,
            -128,      -129,      0x7fffffff, INT32_MIN, 0xffffffffLL,
            1LL << 32, INT64_MAX, INT64_MIN,  1LL << 62};
        switch (pick(b.empty() ? 2 : 8)) {
            case 0: {  // insert random bytes
                size_t at = pick(b.size() + 1), n = 1 + pick(8);
                for (size_t i = 0; i < n; ++i)
                    b.insert(b.begin() + at, static_cast<uint8_t>(rng_()));
                return;
            }
            case 1: {  // splice: this input's head, another's tail
                const Bytes &o = corpus[pick(corpus.size())];
                size_t cut = pick(b.size() + 1), from = pick(o.size() + 1);
                b.resize(cut);
                b.insert(b.end(), o.begin() + from, o.end());
                return;
            }
            case 2:  // flip a bit
                b[pick(b.size())] ^= static_cast<uint8_t>(1u << pick(8));
                return;
            case 3:  // a random byte
                b[pick(b.size())] = static_cast<uint8_t>(rng_());
                return;
            case 4: {  // delete a range
                size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(16, b.size() - at));
                b.erase(b.begin() + at, b.begin() + at + n);
                return;
            }
            case 5: {  // duplicate a range
                size_t at = pick(b.size()), n = 1 + pick(std::min<size_t>(32, b.size() - at));
                Bytes part(b.begin() + at, b.begin() + at + n);
                b.insert(b.begin() + pick(b.size() + 1), part.begin(), part.end());
                return;
            }
            default: {  // an interesting integer of 1, 2, 4 or 8 bytes, little-endian
                int64_t v = kInteresting[pick(sizeof kInteresting / sizeof kInteresting[0])];
                size_t width = size_t{1} << pick(4);
                size_t at = pick(b.size());
                for (size_t i = 0; i < width && at + i < b.size(); ++i)
                    b[at + i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
                return;
            }
        }
    }

    std::mt19937_64 rng_;
    size_t max_len_;
};

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: %s [-seed=N] [-max_len=N] [-artifact_dir=DIR] SECONDS PATH...\n",
                 g_target);
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
    // Undefined behaviour must abort (so the handler saves the input) with a stack trace. With
    // gcc the UBSan runtime is a shared library that reads its options at load time only: set
    // them and start again, unless the caller chose its own.
    if (std::getenv("UBSAN_OPTIONS") == nullptr) {
        ::setenv("UBSAN_OPTIONS", "print_stacktrace=1:abort_on_error=1:halt_on_error=1", 1);
        ::execv("/proc/self/exe", argv);
    }
    const char *slash = std::strrchr(argv[0], '/');
    g_target = slash ? slash + 1 : argv[0];
    uint64_t seed = static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count() ^ (uint64_t{1} * ::getpid()));
    size_t max_len = 0;
    std::string artifact_dir = ".";
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("-seed=", 0) == 0)
            seed = std::strtoull(a.c_str() + 6, nullptr, 10);
        else if (a.rfind("-max_len=", 0) == 0)
            max_len = std::strtoull(a.c_str() + 9, nullptr, 10);
        else if (a.rfind("-artifact_dir=", 0) == 0)
            artifact_dir = a.substr(14);
        else if (!a.empty() && a[0] == '-')
            usage();
        else
            args.push_back(a);
    }
    if (args.size() < 2) usage();
    double seconds = std::strtod(args[0].c_str(), nullptr);
    install_handlers();

    std::vector<Bytes> corpus;
    for (size_t i = 1; i < args.size(); ++i)
        for (const std::string &path : list_inputs(args[i])) {
            Bytes b;
            if (!read_file(path, &b)) {
                std::fprintf(stderr, "%s: cannot read %s\n", g_target, path.c_str());
                return 2;
            }
            run(b, artifact_dir);
            corpus.push_back(std::move(b));
        }
    size_t longest = 0;
    for (const Bytes &b : corpus)
        longest = std::max(longest, b.size());
    if (max_len == 0) max_len = std::max<size_t>(64, 2 * longest);
    std::printf("%s: replayed %zu inputs; mutating for %.1f s, seed %llu (-seed=%llu repeats)\n",
                g_target, corpus.size(), seconds, static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    if (corpus.empty()) corpus.emplace_back();

    Mutator m(seed, max_len);
    auto start = std::chrono::steady_clock::now();
    auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(seconds));
    uint64_t execs = 0;
    while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 16; ++i, ++execs)
            run(m.mutate(corpus), artifact_dir);
    }
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %llu execs in %.1f s (%.0f/s), no failure\n", g_target,
                static_cast<unsigned long long>(execs), took, took > 0 ? execs / took : 0.0);
    return 0;
}
