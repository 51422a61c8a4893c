// SPDX-License-Identifier: Apache-2.0
/*
 * gloo_allreduce_perf.cc - nccl-tests style collective benchmark over Gloo
 * (C++ API, TCP transport, FileStore rendezvous).  Same output format as
 * mpi_allreduce_perf (see bench_common.h).
 *
 * Launch one process per rank, e.g. with launch_local.sh, which sets:
 *   RANK, WORLD_SIZE       rank and number of ranks
 *   GLOO_STORE_DIR         directory for the FileStore rendezvous (must be
 *                          fresh/empty for every run)
 *   GLOO_PREFIX            optional key prefix (default "bench")
 *
 *   -c allreduce|allgather|broadcast   collective (default allreduce)
 *   -A new|ring|ring_chunked|hd|bcube  allreduce implementation:
 *        new          gloo::allreduce() (AllreduceOptions, default algorithm
 *                     = ring; this is what torch ProcessGroupGloo calls)
 *        bcube        gloo::allreduce() with the BCUBE algorithm
 *        ring, ring_chunked, hd  the legacy gloo::AllreduceRing,
 *                     AllreduceRingChunked, AllreduceHalvingDoubling classes
 *                     (in-place only)
 *   -H ADDR                            address to bind (default 127.0.0.1)
 *   -b -e -f -x -i -r -t -w -m -C -v   as in mpi_allreduce_perf
 *
 * Timing: per-rank average over the timed iterations, MAX over ranks.  The
 * op objects (options / algorithm instances) are built once per size and
 * reused, so per-call set-up cost is excluded (torch rebuilds them on
 * every call; see torch_allreduce_perf.py).
 */
#include <getopt.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/allreduce_bcube.h"
#include "gloo/allreduce_halving_doubling.h"
#include "gloo/allreduce_ring.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/config.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"

#include "bench_common.h"

namespace {

enum Coll { ALLREDUCE = 0, ALLGATHER = 1, BROADCAST = 2 };
const char *kCollNames[] = {"allreduce", "allgather", "broadcast"};

std::shared_ptr<gloo::Context> g_ctx;
int g_rank = 0, g_n = 1, g_root = 0;
int g_inplace = 1;
Coll g_coll = ALLREDUCE;
std::string g_algo = "new";
float *g_sbuf = nullptr;
float *g_rbuf = nullptr;
uint32_t g_tag = 1;  // tags of the measured ops; bookkeeping ops use 0x40000000+

uint32_t nextTag() {
    g_tag = (g_tag + 1) & 0x3fffffff;
    return g_tag;
}

void sumFloat(void *c, const void *a, const void *b, size_t n) {
    gloo::sum<float>(c, a, b, n);
}

// Small helper collectives used for coordination (not timed).
uint32_t g_ctl_tag = 0x40000000;
double allreduceDouble(double v, bool isMax) {
    gloo::AllreduceOptions opts(g_ctx);
    opts.setOutput(&v, 1);
    if (isMax)
        opts.setReduceFunction(
            [](void *c, const void *a, const void *b, size_t n) { gloo::max<double>(c, a, b, n); });
    else
        opts.setReduceFunction(
            [](void *c, const void *a, const void *b, size_t n) { gloo::sum<double>(c, a, b, n); });
    opts.setTag(g_ctl_tag++);
    gloo::allreduce(opts);
    return v;
}

void barrier() {
    gloo::BarrierOptions opts(g_ctx);
    opts.setTag(g_ctl_tag++);
    gloo::barrier(opts);
}

// One prepared operation for a given element count.
struct Op {
    std::function<void()> run;
};

Op makeOp(size_t count) {
    Op op;
    const int icount = static_cast<int>(count);
    if (g_coll == ALLREDUCE) {
        if (g_algo == "new" || g_algo == "bcube") {
            auto opts = std::make_shared<gloo::AllreduceOptions>(g_ctx);
            if (!g_inplace) opts->setInput(g_sbuf, count);
            opts->setOutput(g_rbuf, count);
            opts->setReduceFunction(sumFloat);
            opts->setAlgorithm(g_algo == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                 : gloo::AllreduceOptions::Algorithm::RING);
            op.run = [opts]() {
                opts->setTag(nextTag());
                gloo::allreduce(*opts);
            };
        } else {
            std::vector<float *> ptrs{g_rbuf};
            std::shared_ptr<gloo::Algorithm> algo;
            if (g_algo == "ring")
                algo = std::make_shared<gloo::AllreduceRing<float>>(g_ctx, ptrs, icount);
            else if (g_algo == "ring_chunked")
                algo = std::make_shared<gloo::AllreduceRingChunked<float>>(g_ctx, ptrs, icount);
            else if (g_algo == "hd")
                algo = std::make_shared<gloo::AllreduceHalvingDoubling<float>>(g_ctx, ptrs, icount);
            else
                throw std::runtime_error("unknown -A " + g_algo);
            op.run = [algo]() { algo->run(); };
        }
    } else if (g_coll == ALLGATHER) {
        const size_t c = count / static_cast<size_t>(g_n);
        auto opts = std::make_shared<gloo::AllgatherOptions>(g_ctx);
        if (!g_inplace) opts->setInput(g_sbuf, c);
        opts->setOutput(g_rbuf, count);
        op.run = [opts]() {
            opts->setTag(nextTag());
            gloo::allgather(*opts);
        };
    } else {
        auto opts = std::make_shared<gloo::BroadcastOptions>(g_ctx);
        opts->setOutput(g_rbuf, count);  // in-place on every rank, root included
        opts->setRoot(g_root);
        op.run = [opts]() {
            opts->setTag(nextTag());
            gloo::broadcast(*opts);
        };
    }
    return op;
}

void initData(size_t count) {
    if (g_coll == ALLREDUCE) {
        float *in = g_inplace ? g_rbuf : g_sbuf;
        for (size_t i = 0; i < count; i++)
            in[i] = bench_val(g_rank, i);
        if (!g_inplace)
            for (size_t i = 0; i < count; i++)
                g_rbuf[i] = BENCH_SENTINEL;
    } else if (g_coll == ALLGATHER) {
        const size_t c = count / static_cast<size_t>(g_n);
        float *in = g_inplace ? g_rbuf + static_cast<size_t>(g_rank) * c : g_sbuf;
        for (size_t i = 0; i < count; i++)
            g_rbuf[i] = BENCH_SENTINEL;
        for (size_t i = 0; i < c; i++)
            in[i] = bench_val(g_rank, i);
    } else {
        for (size_t i = 0; i < count; i++)
            g_rbuf[i] = g_rank == g_root ? bench_val(g_root, i) : BENCH_SENTINEL;
    }
}

void resetOutputs(size_t count) {
    if (g_coll == ALLREDUCE) {
        if (g_inplace)
            initData(count);
        else
            for (size_t i = 0; i < count; i++)
                g_rbuf[i] = BENCH_SENTINEL;
    } else if (g_coll == ALLGATHER) {
        const size_t c = count / static_cast<size_t>(g_n);
        for (size_t i = 0; i < count; i++)
            if (!(g_inplace && i / c == static_cast<size_t>(g_rank))) g_rbuf[i] = BENCH_SENTINEL;
    } else if (g_rank != g_root) {
        for (size_t i = 0; i < count; i++)
            g_rbuf[i] = BENCH_SENTINEL;
    }
}

long check(size_t count, size_t bytes, const char *when) {
    long wrong = 0;
    size_t first = 0;
    float got = 0, want = 0;
    auto note = [&](size_t i, float g, float w) {
        if (!wrong++) {
            first = i;
            got = g;
            want = w;
        }
    };
    if (g_coll == ALLREDUCE) {
        float expect[64];
        for (int k = 0; k < 64; k++) {
            float s = 0;
            for (int r = 0; r < g_n; r++)
                s += bench_val(r, static_cast<size_t>(k));
            expect[k] = s;
        }
        for (size_t i = 0; i < count; i++)
            if (g_rbuf[i] != expect[i & 63]) note(i, g_rbuf[i], expect[i & 63]);
    } else if (g_coll == ALLGATHER) {
        const size_t c = count / static_cast<size_t>(g_n);
        for (size_t i = 0; i < count; i++) {
            float e = bench_val(static_cast<int>(i / c), i % c);
            if (g_rbuf[i] != e) note(i, g_rbuf[i], e);
        }
    } else {
        for (size_t i = 0; i < count; i++) {
            float e = bench_val(g_root, i);
            if (g_rbuf[i] != e) note(i, g_rbuf[i], e);
        }
    }
    if (wrong)
        fprintf(stderr,
                "# ERROR rank %d size %zu (%s): %ld wrong elements, first at %zu: got %g "
                "expected %g\n",
                g_rank, bytes, when, wrong, first, static_cast<double>(got),
                static_cast<double>(want));
    return wrong;
}

int envInt(const char *a, const char *b, int dflt) {
    const char *v = getenv(a);
    if (!v && b) v = getenv(b);
    return v ? atoi(v) : dflt;
}

void usage() {
    fprintf(stderr,
            "usage: RANK=r WORLD_SIZE=n GLOO_STORE_DIR=dir gloo_allreduce_perf\n"
            "       [-c allreduce|allgather|broadcast] [-A new|ring|ring_chunked|hd|bcube]\n"
            "       [-H ADDR] [-b MIN] [-e MAX] [-f FACTOR] [-x EXTRA,...|none] [-i 0|1]\n"
            "       [-r ROOT] [-t SEC] [-w N] [-m MAXITERS] [-C 0|1] [-v]\n");
}

}  // namespace

int main(int argc, char **argv) {
    size_t minb = bench_parse_size(BENCH_DEFAULT_MIN), maxb = bench_parse_size(BENCH_DEFAULT_MAX);
    size_t sizes[BENCH_MAX_SIZES];
    double factor = BENCH_DEFAULT_FACTOR, target = BENCH_DEFAULT_TARGET_S;
    const char *extra = BENCH_DEFAULT_EXTRA;
    std::string host = "127.0.0.1";
    int warmup = 2, opt, doCheck = 1, verbose = 0;
    long maxit = 1000000;

    g_rank = envInt("RANK", "OMPI_COMM_WORLD_RANK", -1);
    g_n = envInt("WORLD_SIZE", "SIZE", -1);
    const char *storeDir = getenv("GLOO_STORE_DIR");
    const char *prefix = getenv("GLOO_PREFIX") ? getenv("GLOO_PREFIX") : "bench";

    bench_opts common = {&minb,  &maxb,    &factor,    &extra,  &target, &warmup,
                         &maxit, &doCheck, &g_inplace, &g_root, &verbose};
    while ((opt = getopt(argc, argv, "c:A:H:b:e:f:x:i:r:t:w:m:C:vh")) != -1) {
        switch (opt) {
            case 'c':
                if (!strcmp(optarg, "allreduce"))
                    g_coll = ALLREDUCE;
                else if (!strcmp(optarg, "allgather"))
                    g_coll = ALLGATHER;
                else if (!strcmp(optarg, "broadcast") || !strcmp(optarg, "bcast"))
                    g_coll = BROADCAST;
                else {
                    usage();
                    return 2;
                }
                break;
            case 'A':
                g_algo = optarg;
                break;
            case 'H':
                host = optarg;
                break;
            default:
                if (bench_option(opt, optarg, &common)) break;
                usage();
                return 2;
        }
    }
    if (g_rank < 0 || g_n < 1 || g_rank >= g_n || !storeDir) {
        usage();
        fprintf(stderr, "gloo_allreduce_perf: RANK, WORLD_SIZE and GLOO_STORE_DIR must be set\n");
        return 2;
    }
    if (g_root < 0 || g_root >= g_n) {
        fprintf(stderr, "bad root\n");
        return 2;
    }
    if (g_coll == BROADCAST) g_inplace = true;
    if (g_coll == ALLREDUCE && g_algo != "new" && g_algo != "bcube") {
        if (!g_inplace && g_rank == 0)
            fprintf(stderr, "# note: -A %s is in-place only; using -i 1\n", g_algo.c_str());
        g_inplace = true;
    }
    if (warmup < 1) warmup = 1;
    if (maxit < 1) maxit = 1;
    int nsizes = bench_size_list(minb, maxb, factor, extra, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) {
        usage();
        return 2;
    }

    try {
        gloo::transport::tcp::attr attr;
        attr.hostname = host;
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        auto fileStore = gloo::rendezvous::FileStore(storeDir);
        auto prefixStore = gloo::rendezvous::PrefixStore(prefix, fileStore);
        auto ctx = std::make_shared<gloo::rendezvous::Context>(g_rank, g_n);
        ctx->setTimeout(std::chrono::seconds(300));
        ctx->connectFullMesh(prefixStore, dev);
        g_ctx = ctx;

        size_t maxcount = sizes[nsizes - 1] / sizeof(float);
        if (maxcount < static_cast<size_t>(g_n)) maxcount = static_cast<size_t>(g_n);
        if (maxcount > static_cast<size_t>(INT32_MAX)) throw std::runtime_error("size too large");
        if (posix_memalign(reinterpret_cast<void **>(&g_rbuf), 4096, maxcount * sizeof(float)) ||
            posix_memalign(reinterpret_cast<void **>(&g_sbuf), 4096, maxcount * sizeof(float)))
            throw std::runtime_error("out of memory");
        memset(g_rbuf, 0, maxcount * sizeof(float));
        memset(g_sbuf, 0, maxcount * sizeof(float));

        const double busfactor = g_coll == ALLREDUCE   ? 2.0 * (g_n - 1) / g_n
                                 : g_coll == ALLGATHER ? static_cast<double>(g_n - 1) / g_n
                                                       : 1.0;
        const char *opname = g_coll == ALLREDUCE ? "sum" : "none";
        if (g_rank == 0) {
            printf(
                "# gloo_allreduce_perf: coll=%s algo=%s nranks=%d inplace=%d dtype=float32 "
                "target_s=%.2f warmup=%d check=%d transport=tcp host=%s\n# gloo: %d.%d.%d\n",
                kCollNames[g_coll], g_coll == ALLREDUCE ? g_algo.c_str() : "default", g_n,
                g_inplace ? 1 : 0, target, warmup, doCheck ? 1 : 0, host.c_str(),
                GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
            printf("%s\n", BENCH_HEADER);
            fflush(stdout);
        }

        long totalWrong = 0;
        for (int si = 0; si < nsizes; si++) {
            size_t count = sizes[si] / sizeof(float);
            if (count < 1) count = 1;
            if (g_coll == ALLGATHER) {
                count -= count % static_cast<size_t>(g_n);
                if (count < static_cast<size_t>(g_n)) count = static_cast<size_t>(g_n);
            }
            const size_t bytes = count * sizeof(float);
            const int nwarm = sizes[si] >= (static_cast<size_t>(32) << 20) ? 1 : warmup;
            long wrong = 0;

            initData(count);
            Op op = makeOp(count);
            barrier();
            op.run();
            if (doCheck) wrong += check(count, bytes, "warm-up");
            for (int w = 1; w < nwarm; w++)
                op.run();

            long it = 1;
            double dt = 0;
            for (;;) {
                barrier();
                double t0 = bench_now();
                for (long k = 0; k < it; k++)
                    op.run();
                dt = allreduceDouble(bench_now() - t0, true);
                if (dt >= BENCH_CALIB_MIN_S || it >= maxit) break;
                it = bench_calib_next(it, dt, maxit);
            }
            const long iters = bench_iters_for(dt / static_cast<double>(it), target, maxit);

            resetOutputs(count);
            barrier();
            long flt = bench_minflt();
            double t0 = bench_now();
            for (long k = 0; k < iters; k++)
                op.run();
            double mine = (bench_now() - t0) / static_cast<double>(iters);
            flt = bench_minflt() - flt;
            dt = allreduceDouble(mine, true);

            if (doCheck) {
                if (g_coll == ALLREDUCE && g_inplace) {
                    initData(count);
                    barrier();
                    op.run();
                }
                wrong += check(count, bytes, "timed");
            }
            wrong = static_cast<long>(allreduceDouble(static_cast<double>(wrong), false));
            totalWrong += wrong;
            if (g_rank == 0) {
                bench_print_line(bytes, count, "float32", opname, dt, busfactor);
                if (wrong)
                    printf("# ERROR size %zu: %ld wrong elements (all ranks)\n", bytes, wrong);
                if (verbose)
                    printf("#   iters=%ld rank0_minor_faults_per_iter=%.1f\n", iters,
                           static_cast<double>(flt) / static_cast<double>(iters));
                fflush(stdout);
            }
        }
        if (g_rank == 0) {
            printf("# errors: %ld%s\n", totalWrong, doCheck ? "" : " (check disabled)");
            fflush(stdout);
        }
        barrier();
        g_ctx.reset();
        free(g_sbuf);
        free(g_rbuf);
        return totalWrong ? 1 : 0;
    } catch (const std::exception &e) {
        fprintf(stderr, "gloo_allreduce_perf rank %d: %s\n", g_rank, e.what());
        return 3;
    }
}
