// SPDX-License-Identifier: Apache-2.0
// Adasum (Maleki et al., "Scaling Distributed Training with Adaptive Summation", MLSys 2021)
// by vector halving and distance doubling, the structure of Horovod's CPU Adasum.
//
// Adasum combines two gradients a and b as
//     (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b,
// which adds orthogonal vectors and averages parallel ones, and a group recursively: each half
// of the group is combined first, then the two results. Member indices give the tree: at the
// level of distance d, the subgroup of d members with bit d clear is a, its partner subgroup
// with the bit set is b.
//
// Reduce phase, d = 1, 2, 4, ...: before level d the d members of a subgroup hold its combined
// vector cut into d disjoint segments. Partners (me ^ d) hold the same segment of a and of b;
// they split it in two halves (the a side keeps the first, the b side the second) and trade
// the halves they give up, so each now holds a's and b's values on its half. The 2d members of
// the group hold disjoint halves that cover the whole vector, so the sums over the group of the
// partial dot product and squared norms (float64, allreduced by recursive doubling among the
// 2d members) are the full a.b, |a|^2, |b|^2, and each member combines its half. Gather phase,
// d = n/2, ..., 1: partners trade their segments back until everyone has the whole vector.
//
// Each element is combined by exactly one member per level and then only copied, so every
// member ends bitwise identical. A norm below kNormFloor counts as zero (coefficient 1), as
// in Horovod: the vector contributes nothing and the other passes through unscaled.
#include <cstring>

#include "collectives/collectives.h"
#include "common/dtype.h"
#include "common/half.h"
#include "common/log.h"

namespace hvd::collectives {

namespace {

constexpr const char *kName = "adasum";
constexpr double kNormFloor = 1e-8;  // Horovod's threshold for a zero vector
constexpr int kMaxLevels = 32;

// ---- Typed kernels: values are read into double and written back rounded to the dtype.

struct Fp16 {
    using T = uint16_t;
    static double get(T v) { return fp16_to_float(v); }
    static T put(double v) { return float_to_fp16(static_cast<float>(v)); }
};
struct Bf16 {
    using T = uint16_t;
    static double get(T v) { return bf16_to_float(v); }
    static T put(double v) { return float_to_bf16(static_cast<float>(v)); }
};
template <typename F>
struct Native {
    using T = F;
    static double get(T v) { return v; }
    static T put(double v) { return static_cast<T>(v); }
};

// sums[0] += a.b, sums[1] += |a|^2, sums[2] += |b|^2 over n elements.
template <typename E>
void dot_and_norms(const void *a, const void *b, size_t n, double *sums) {
    const auto *x = static_cast<const typename E::T *>(a);
    const auto *y = static_cast<const typename E::T *>(b);
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; ++i) {
        double u = E::get(x[i]), v = E::get(y[i]);
        dot += u * v;
        aa += u * u;
        bb += v * v;
    }
    sums[0] += dot;
    sums[1] += aa;
    sums[2] += bb;
}

// dst[i] = ca * a[i] + cb * b[i]; dst is a or b.
template <typename E>
void scaled_add(void *dst, const void *a, const void *b, size_t n, double ca, double cb) {
    auto *out = static_cast<typename E::T *>(dst);
    const auto *x = static_cast<const typename E::T *>(a);
    const auto *y = static_cast<const typename E::T *>(b);
    for (size_t i = 0; i < n; ++i)
        out[i] = E::put(ca * E::get(x[i]) + cb * E::get(y[i]));
}

struct Kernels {
    void (*dot_and_norms)(const void *, const void *, size_t, double *);
    void (*scaled_add)(void *, const void *, const void *, size_t, double, double);
};

template <typename E>
constexpr Kernels kernels_of() {
    return Kernels{dot_and_norms<E>, scaled_add<E>};
}

// Null for a dtype Adasum does not take (integers, bool: the formula needs real numbers).
const Kernels *kernels_for(int32_t dtype) {
    static constexpr Kernels kFp16 = kernels_of<Fp16>(), kBf16 = kernels_of<Bf16>(),
                             kFp32 = kernels_of<Native<float>>(),
                             kFp64 = kernels_of<Native<double>>();
    switch (dtype) {
        case HVD_DTYPE_FLOAT16:
            return &kFp16;
        case HVD_DTYPE_BFLOAT16:
            return &kBf16;
        case HVD_DTYPE_FLOAT32:
            return &kFp32;
        case HVD_DTYPE_FLOAT64:
            return &kFp64;
        default:
            return nullptr;
    }
}

// The coefficient of a vector with squared norm `own` in Adasum(a, b).
double coefficient(double dot, double own) {
    return own >= kNormFloor ? 1.0 - dot / own * 0.5 : 1.0;
}

// ---- The algorithm.

struct Segment {
    size_t begin;   // elements
    size_t length;  // elements
};

struct Adasum {
    const Comm &comm;
    char *buf;
    size_t esize;
    const Kernels &k;
    char *tmp;  // the partner's half, at most (count + 1) / 2 elements
    transport::Completion *cs;
    int32_t me;

    char *at(const Segment &s) const { return buf + s.begin * esize; }
    size_t bytes(const Segment &s) const { return s.length * esize; }
};

// Sends send_bytes to peer and receives recv_bytes from it, concurrently; empty messages are
// skipped by both sides (each knows both sizes).
hvd_status_t exchange(const Adasum &x, int32_t peer, const void *send, size_t send_bytes,
                      void *recv, size_t recv_bytes) {
    if (recv_bytes > 0) x.comm.recv(peer, recv, recv_bytes, &x.cs[0]);
    if (send_bytes > 0) x.comm.send(peer, send, send_bytes, &x.cs[1]);
    if (recv_bytes > 0) {
        hvd_status_t st = x.comm.wait_recv(&x.cs[0], recv_bytes, "adasum: receive from", peer);
        if (st != HVD_OK) return st;
    }
    return send_bytes > 0 ? x.comm.wait(&x.cs[1], "adasum: send to", peer) : HVD_OK;
}

// Sums the three partial values over the `group` members that share me / group (a power of
// two), by recursive doubling. The lower side's value is always the left operand, so every
// member evaluates the same expression and gets the same bits.
hvd_status_t sum_over_group(const Adasum &x, double *sums, int32_t group) {
    for (int32_t d = 1; d < group; d *= 2) {
        int32_t peer = x.me ^ d;
        double theirs[3];
        hvd_status_t st = exchange(x, peer, sums, sizeof theirs, theirs, sizeof theirs);
        if (st != HVD_OK) return st;
        for (int i = 0; i < 3; ++i)
            sums[i] = peer < x.me ? theirs[i] + sums[i] : sums[i] + theirs[i];
    }
    return HVD_OK;
}

// One level of the reduce phase: *seg (held by me and my partner at distance d) is halved,
// my half is combined from both sides' values, and *seg becomes that half.
hvd_status_t reduce_level(const Adasum &x, Segment *seg, int32_t d) {
    bool a_side = (x.me & d) == 0;
    size_t first = seg->length / 2;
    Segment lower{seg->begin, first}, upper{seg->begin + first, seg->length - first};
    const Segment &keep = a_side ? lower : upper, &give = a_side ? upper : lower;
    hvd_status_t st = exchange(x, x.me ^ d, x.at(give), x.bytes(give), x.tmp, x.bytes(keep));
    if (st != HVD_OK) return st;
    const char *a = a_side ? x.at(keep) : x.tmp, *b = a_side ? x.tmp : x.at(keep);
    double sums[3] = {0, 0, 0};  // a.b, |a|^2, |b|^2
    x.k.dot_and_norms(a, b, keep.length, sums);
    st = sum_over_group(x, sums, 2 * d);
    if (st != HVD_OK) return st;
    x.k.scaled_add(x.at(keep), a, b, keep.length, coefficient(sums[0], sums[1]),
                   coefficient(sums[0], sums[2]));
    *seg = keep;
    return HVD_OK;
}

// One level of the gather phase: I hold *seg of `parent`, my partner the rest; trade them.
hvd_status_t gather_level(const Adasum &x, Segment *seg, const Segment &parent, int32_t d) {
    bool a_side = (x.me & d) == 0;
    Segment theirs{a_side ? seg->begin + seg->length : parent.begin, parent.length - seg->length};
    hvd_status_t st =
        exchange(x, x.me ^ d, x.at(*seg), x.bytes(*seg), x.at(theirs), x.bytes(theirs));
    *seg = parent;
    return st;
}

hvd_status_t run(const Adasum &x, size_t count, int32_t n) {
    Segment path[kMaxLevels];  // path[level]: the segment held before halving at that level
    Segment seg{0, count};
    int level = 0;
    for (int32_t d = 1; d < n; d *= 2, ++level) {
        path[level] = seg;
        hvd_status_t st = reduce_level(x, &seg, d);
        if (st != HVD_OK) return st;
    }
    for (int32_t d = n / 2; d >= 1; d /= 2) {
        hvd_status_t st = gather_level(x, &seg, path[--level], d);
        if (st != HVD_OK) return st;
    }
    return HVD_OK;
}

hvd_status_t check_args(const Comm &comm, const void *buf, size_t count, int32_t dtype) {
    hvd_status_t st = comm.validate(kName);
    if (st != HVD_OK) return st;
    int32_t n = comm.size();
    const char *problem = nullptr;
    if (kernels_for(dtype) == nullptr) {
        st = HVD_ERR_UNSUPPORTED;
        problem = "only float16, bfloat16, float32 and float64 can be combined by Adasum";
    } else if ((n & (n - 1)) != 0) {
        st = HVD_ERR_UNSUPPORTED;
        problem = "the group size must be a power of two (recursive pairwise combination)";
    } else if (buf == nullptr && count > 0) {
        st = HVD_ERR_INVALID_ARG;
        problem = "null buffer";
    }
    if (problem != nullptr)
        HVD_LOG(kError, comm.global_rank(), "%s: %s (dtype %s, count %zu, group of %d)", kName,
                problem, dtype_name(dtype), count, n);
    return st;
}

}  // namespace

hvd_status_t adasum(Comm &comm, void *buf, size_t count, int32_t dtype) {
    hvd_status_t st = check_args(comm, buf, count, dtype);
    if (st != HVD_OK || comm.size() == 1 || count == 0) return st;
    return comm.guarded(kName, [&] {
        size_t esize = dtype_size(dtype);
        Adasum x{comm,
                 static_cast<char *>(buf),
                 esize,
                 *kernels_for(dtype),
                 static_cast<char *>(comm.scratch->get((count + 1) / 2 * esize)),
                 comm.scratch->completions(2),
                 comm.my_index};
        return run(x, count, comm.size());
    });
}

}  // namespace hvd::collectives
