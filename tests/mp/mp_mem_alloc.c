/* SPDX-License-Identifier: Apache-2.0 */
/* Collectives on memory from hvd_mem_alloc, which the ranks of one host read and write in place
 * in each other's buffers. Allreduce: the allocation API's contract and errors; every dtype and op,
 * in place and out of place, at sizes on both sides of the mapped path's threshold, against
 * references computed here; tensors at offsets inside a region; more regions than a rank keeps
 * mapped; ranks whose memory differs (some from hvd_mem_alloc, some not: the slots take over); and
 * the same bits as the slot path for float sums that round differently in another order.
 * Allgather and broadcast, whose single-copy reads go through the mapping. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "mp_check.h"

static const int32_t kAllDtypes[] = {HVD_DTYPE_UINT8,   HVD_DTYPE_INT8,    HVD_DTYPE_UINT16,
                                     HVD_DTYPE_INT16,   HVD_DTYPE_INT32,   HVD_DTYPE_INT64,
                                     HVD_DTYPE_FLOAT16, HVD_DTYPE_FLOAT32, HVD_DTYPE_FLOAT64,
                                     HVD_DTYPE_BOOL,    HVD_DTYPE_BFLOAT16};
static const int kNumDtypes = sizeof kAllDtypes / sizeof kAllDtypes[0];
static const int32_t kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};

static void *shared(size_t bytes) {
    void *p = NULL;
    hvd_status_t s = hvd_mem_alloc(bytes, &p);
    if (s != HVD_OK || p == NULL) mp_die("hvd_mem_alloc(%zu): %s", bytes, hvd_status_name(s));
    return p;
}

static void release(void *p) {
    hvd_status_t s = hvd_mem_free(p);
    if (s != HVD_OK) mp_die("hvd_mem_free: %s", hvd_status_name(s));
}

static void allreduce(const char *name, int32_t dtype, int32_t op, void *in, void *out,
                      size_t count) {
    int64_t shape[1] = {(int64_t)count};
    hvd_tensor_t tin = mp_tensor(in, dtype, 1, shape);
    hvd_tensor_t tout = mp_tensor(out, dtype, 1, shape);
    hvd_op_params_t p = mp_reduce_params(name, op);
    hvd_request_h req;
    hvd_status_t s = hvd_allreduce_enqueue(mp_ctx, &tin, &tout, &p, &req);
    if (s != HVD_OK) mp_die("allreduce enqueue %s: %s", name, hvd_status_name(s));
    s = mp_wait(req);
    if (s != HVD_OK) mp_die("allreduce %s: %s", name, hvd_status_name(s));
    hvd_request_release(req);
}

/* Fills `in`, reduces into `out` (== in for in place) and checks every element. */
static void check_values(int32_t dtype, int32_t op, unsigned char *in, unsigned char *out,
                         size_t count, const char *what) {
    for (size_t i = 0; i < count; ++i)
        mp_set(dtype, in, i, mp_value(dtype, mp_rank, i));
    if (out != in) memset(out, 0x5A, count * mp_dtype_size(dtype));
    char name[96];
    snprintf(name, sizeof name, "mapped.%s.%d.%zu.%s", mp_dtype_name(dtype), op, count, what);
    allreduce(name, dtype, op, in, out, count);
    for (size_t i = 0; i < count; ++i) {
        double ref = mp_reference(dtype, op, i);
        double got = mp_get(dtype, out, i);
        if (fabs(got - ref) > mp_tolerance(dtype, ref))
            mp_die("%s: element %zu is %g, expected %g", name, i, got, ref);
    }
    if (out != in)
        for (size_t i = 0; i < count; ++i)
            if (mp_get(dtype, in, i) != mp_value(dtype, mp_rank, i))
                mp_die("%s: input element %zu changed", name, i);
}

static void test_alloc_contract(void **state) {
    (void)state;
    void *p = (void *)1;
    assert_int_equal(hvd_mem_alloc(0, &p), HVD_ERR_INVALID_ARG);
    assert_ptr_equal(p, (void *)1); /* untouched on failure */
    assert_int_equal(hvd_mem_alloc(64, NULL), HVD_ERR_INVALID_ARG);
    unsigned char *q = shared(5000);
    assert_int_equal((uintptr_t)q % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
    for (size_t i = 0; i < 5000; ++i)
        assert_int_equal(q[i], 0);
    memset(q, 0x77, 5000);
    assert_int_equal(hvd_mem_free(q + 64), HVD_ERR_INVALID_ARG); /* not a region's start */
    int on_stack = 0;
    assert_int_equal(hvd_mem_free(&on_stack), HVD_ERR_INVALID_ARG);
    char detail[256];
    hvd_last_error(detail, sizeof detail);
    assert_non_null(strstr(detail, "hvd_mem_alloc"));
    release(q);
    assert_int_equal(hvd_mem_free(q), HVD_ERR_INVALID_ARG); /* freed already */
    assert_int_equal(hvd_mem_free(NULL), HVD_OK);
}

static void test_every_dtype_and_op(void **state) {
    (void)state;
    /* one shot, and above (mapped from HVD_SHM_MAPPED_MIN_BYTES, through the slots below) */
    static const size_t counts[] = {37, 20000, 70001};
    for (int d = 0; d < kNumDtypes; ++d)
        for (int o = 0; o < 5; ++o)
            for (int c = 0; c < 3; ++c) {
                int32_t dtype = kAllDtypes[d], op = kOps[o];
                if (dtype == HVD_DTYPE_BOOL && op == HVD_OP_AVERAGE) continue;
                size_t bytes = counts[c] * mp_dtype_size(dtype);
                unsigned char *in = shared(bytes), *out = shared(bytes);
                check_values(dtype, op, in, in, counts[c], "in_place");
                check_values(dtype, op, in, out, counts[c], "out_of_place");
                release(out);
                release(in);
            }
}

/* Tensors that start and end inside a region, in the same region for in and out. */
static void test_offsets_inside_a_region(void **state) {
    (void)state;
    const size_t count = 300001;
    const size_t bytes = count * sizeof(double);
    const size_t size = 2 * bytes + 3 * 4096;
    unsigned char *region = shared(size);
    memset(region, 0xCD, size);
    unsigned char *t = region + 4096 + 8;
    check_values(HVD_DTYPE_FLOAT64, HVD_OP_SUM, t, t, count, "offset_in_place");
    for (size_t k = 0; k < size; ++k) /* nothing around the tensor written */
        if ((region + k < t || region + k >= t + bytes) && region[k] != 0xCD)
            mp_die("in place at an offset: byte %zu of the region changed", k);
    unsigned char *in = region + 8, *out = region + bytes + 2 * 4096;
    memset(region, 0xCD, size);
    check_values(HVD_DTYPE_FLOAT64, HVD_OP_MAX, in, out, count, "offset_out_of_place");
    for (size_t k = 0; k < size; ++k)
        if ((region + k < in || region + k >= in + bytes) &&
            (region + k < out || region + k >= out + bytes) && region[k] != 0xCD)
            mp_die("out of place at offsets: byte %zu of the region changed", k);
    release(region);
}

/* More regions, one after another, than a rank keeps its peers' mapped (16): each new one is
 * mapped, freed ones dropped, and results stay right. Sizes vary so that freed address ranges
 * are reused by later regions. */
/* Mappings of hvd_mem_alloc memory in this process (this rank's own and its peers'). */
static int shared_mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, "memfd:hvd-mem") != NULL;
    fclose(f);
    return n;
}

static void test_many_regions(void **state) {
    (void)state;
    for (int k = 0; k < 24; ++k) {
        size_t count = 40000 + (size_t)(k % 5) * 9000;
        unsigned char *buf = shared(count * sizeof(int32_t));
        check_values(HVD_DTYPE_INT32, HVD_OP_SUM, buf, buf, count, k % 2 ? "odd" : "even");
        release(buf);
        /* Freed regions are released by the peers once a new one is mapped: what stays is
         * each peer's last region. */
        if (shared_mappings() > mp_size - 1)
            mp_die("after region %d: %d mappings of shared memory, expected at most %d", k,
                   shared_mappings(), mp_size - 1);
    }
}

/* Memory that differs between ranks: the ranks that offered their buffers take the slots too. */
static void test_mixed_memory(void **state) {
    (void)state;
    const size_t count = 250000;
    const size_t bytes = count * sizeof(float);
    for (int32_t odd_one = 0; odd_one < mp_size; ++odd_one) {
        int mine_shared = mp_rank != odd_one;
        unsigned char *in = mine_shared ? shared(bytes) : malloc(bytes);
        assert_non_null(in);
        check_values(HVD_DTYPE_FLOAT32, HVD_OP_SUM, in, in, count, "mixed");
        /* out of place with only the output shared (the input is not): slots as well */
        unsigned char *out = shared(bytes), *plain = malloc(bytes);
        assert_non_null(plain);
        check_values(HVD_DTYPE_FLOAT32, HVD_OP_MIN, plain, out, count, "plain_in_shared_out");
        free(plain);
        release(out);
        if (mine_shared)
            release(in);
        else
            free(in);
    }
}

/* Many tensors enqueued together (fused into one allreduce), carved from one region, `gap`
 * elements apart (0: back to back); `grouped`: one grouped allreduce (always fused), else one
 * enqueue each (fused as they meet in the engine). With `plain_piece` >= 0, that tensor is
 * malloc'd on the last rank instead (the slots take over). */
static void check_fused(int32_t op, int plain_piece, size_t gap, int grouped) {
    enum { kPieces = 64 };
    size_t counts[kPieces], offsets[kPieces], total = 0;
    for (int k = 0; k < kPieces; ++k) {
        counts[k] = 700 + (size_t)k * 53;
        offsets[k] = total;
        total += counts[k] + gap;
    }
    int32_t *region = shared(total * sizeof(int32_t));
    int32_t *plain = malloc(counts[kPieces - 1] * sizeof(int32_t)); /* the largest */
    assert_non_null(plain);
    int32_t *tensor[kPieces];
    int64_t shapes[kPieces][1];
    hvd_tensor_t tts[kPieces];
    const hvd_tensor_t *ptrs[kPieces];
    hvd_request_h reqs[kPieces];
    char name[64];
    for (int k = 0; k < kPieces; ++k) {
        tensor[k] = k == plain_piece && mp_rank == mp_size - 1 ? plain : region + offsets[k];
        for (size_t i = 0; i < counts[k]; ++i)
            tensor[k][i] = (int32_t)mp_value(HVD_DTYPE_INT32, mp_rank, i + (size_t)k);
        shapes[k][0] = (int64_t)counts[k];
        tts[k] = mp_tensor(tensor[k], HVD_DTYPE_INT32, 1, shapes[k]);
        ptrs[k] = &tts[k];
        if (grouped) continue;
        snprintf(name, sizeof name, "fused.%d.%d.%zu.%d", op, plain_piece, gap, k);
        hvd_op_params_t p = mp_reduce_params(name, op);
        hvd_status_t s = hvd_allreduce_enqueue(mp_ctx, &tts[k], &tts[k], &p, &reqs[k]);
        if (s != HVD_OK) mp_die("enqueue %s: %s", name, hvd_status_name(s));
    }
    if (grouped) {
        snprintf(name, sizeof name, "grouped.%d.%d.%zu", op, plain_piece, gap);
        hvd_op_params_t p = mp_reduce_params(name, op);
        hvd_status_t s = hvd_grouped_allreduce_enqueue(mp_ctx, ptrs, ptrs, kPieces, &p, &reqs[0]);
        if (s != HVD_OK) mp_die("enqueue %s: %s", name, hvd_status_name(s));
    }
    for (int k = 0; k < (grouped ? 1 : kPieces); ++k) {
        hvd_status_t s = mp_wait(reqs[k]);
        if (s != HVD_OK) mp_die("fused piece %d: %s", k, hvd_status_name(s));
        hvd_request_release(reqs[k]);
    }
    for (int k = 0; k < kPieces; ++k) {
        for (size_t i = 0; i < counts[k]; ++i) {
            double ref = mp_reference(HVD_DTYPE_INT32, op, i + (size_t)k);
            if (tensor[k][i] != ref)
                mp_die("fused op %d piece %d element %zu: %d, expected %g", op, k, i, tensor[k][i],
                       ref);
        }
        for (size_t g = 0; g < gap && k != plain_piece; ++g) /* gaps untouched */
            assert_int_equal(region[offsets[k] + counts[k] + g], 0);
    }
    free(plain);
    release(region);
}

static void test_fused_pieces(void **state) {
    (void)state;
    for (int grouped = 0; grouped < 2; ++grouped) {
        check_fused(HVD_OP_SUM, -1, 16, grouped);
        check_fused(HVD_OP_MAX, -1, 16, grouped);
        check_fused(HVD_OP_SUM, 17, 16, grouped);
        check_fused(HVD_OP_SUM, -1, 0, grouped); /* back to back: reduced as runs */
        check_fused(HVD_OP_MIN, 17, 0, grouped);
    }
}

/* Allgather into a caller-owned output (in place and not) and broadcast from every root, on
 * hvd_mem_alloc memory (`shared_on` says which ranks use it; the others malloc): blocks above
 * the single-copy minimum, which readers then copy through their mapping of the owner's
 * region instead of cross-memory attach. */
static void *either(int shared_here, size_t bytes) {
    void *p = shared_here ? shared(bytes) : malloc(bytes);
    assert_non_null(p);
    return p;
}

static void drop(int shared_here, void *p) {
    if (shared_here)
        release(p);
    else
        free(p);
}

static double block_value(int32_t r, size_t k) {
    return (double)((r * 131 + (int)(k % 1009)) % 2000);
}

static void check_allgather(int shared_here, int in_place) {
    const int64_t cols = 3;
    int64_t rows_of[8], total = 0, first = 0;
    for (int32_t r = 0; r < mp_size; ++r) {
        rows_of[r] = 4000 + 900 * r; /* 47-79 KiB per rank in float32 */
        if (r < mp_rank) first += rows_of[r];
        total += rows_of[r];
    }
    size_t esz = sizeof(float), mine = (size_t)(rows_of[mp_rank] * cols);
    float *out = either(shared_here, (size_t)(total * cols) * esz);
    float *in = in_place ? out + first * cols : either(shared_here, mine * esz);
    for (size_t k = 0; k < mine; ++k)
        in[k] = (float)block_value(mp_rank, k);
    int64_t shape_in[2] = {rows_of[mp_rank], cols}, shape_out[2] = {total, cols};
    hvd_tensor_t ti = mp_tensor(in, HVD_DTYPE_FLOAT32, 2, shape_in);
    hvd_tensor_t to = mp_tensor(out, HVD_DTYPE_FLOAT32, 2, shape_out);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME;
    p.name = in_place ? "gather.in_place" : "gather.out_of_place";
    hvd_request_h req;
    hvd_status_t s = hvd_allgather_into_enqueue(mp_ctx, &ti, &to, &p, &req);
    if (s != HVD_OK) mp_die("allgather_into enqueue: %s", hvd_status_name(s));
    if ((s = mp_wait(req)) != HVD_OK) mp_die("allgather_into: %s", hvd_status_name(s));
    hvd_request_release(req);
    size_t at = 0;
    for (int32_t r = 0; r < mp_size; ++r)
        for (size_t k = 0; k < (size_t)(rows_of[r] * cols); ++k, ++at)
            if (out[at] != (float)block_value(r, k))
                mp_die("allgather %s: rank %d's element %zu is %g, expected %g",
                       in_place ? "in place" : "out of place", r, k, (double)out[at],
                       block_value(r, k));
    if (!in_place) drop(shared_here, in);
    drop(shared_here, out);
}

static void check_broadcast(int shared_here, int32_t root, size_t count) {
    float *buf = either(shared_here, count * sizeof(float));
    for (size_t k = 0; k < count; ++k)
        buf[k] = mp_rank == root ? (float)block_value(root, k) : -1.0f;
    int64_t shape[1] = {(int64_t)count};
    hvd_tensor_t t = mp_tensor(buf, HVD_DTYPE_FLOAT32, 1, shape);
    hvd_op_params_t p = mp_params(NULL);
    p.field_mask = HVD_OP_FIELD_NAME | HVD_OP_FIELD_ROOT;
    p.name = "bcast";
    p.root_rank = root;
    hvd_request_h req;
    hvd_status_t s = hvd_broadcast_enqueue(mp_ctx, &t, &t, &p, &req);
    if (s != HVD_OK) mp_die("broadcast enqueue: %s", hvd_status_name(s));
    if ((s = mp_wait(req)) != HVD_OK) mp_die("broadcast: %s", hvd_status_name(s));
    hvd_request_release(req);
    for (size_t k = 0; k < count; ++k)
        if (buf[k] != (float)block_value(root, k))
            mp_die("broadcast from %d, %zu floats: element %zu is %g, expected %g", root, count, k,
                   (double)buf[k], block_value(root, k));
    drop(shared_here, buf);
}

static void test_allgather_and_broadcast(void **state) {
    (void)state;
    for (int mixed = 0; mixed < 2; ++mixed) {
        int shared_here = !(mixed && mp_rank == mp_size - 1);
        check_allgather(shared_here, 1);
        check_allgather(shared_here, 0);
        for (int32_t root = 0; root < mp_size; ++root) {
            check_broadcast(shared_here, root, 200001);  /* in the single-copy range */
            check_broadcast(shared_here, root, 1500000); /* 2 ranks: each copies half */
        }
    }
}

/* A grouped allreduce (always one fused op) of n tensors of `count` int32, each in its own
 * region (in place) or with input and output in two regions. Up to 16 regions per rank go the
 * mapped way; more would unmap each other mid-op, so they take the slots. With `starve`, the
 * last rank cannot take another descriptor (its file limit is lowered to what it uses), so it
 * cannot map its peers' new regions: every rank must then take the slots, not fail. */
static void check_grouped(int n, size_t count, int in_place, int starve) {
    enum { kMax = 24 };
    int32_t *ins[kMax], *outs[kMax];
    hvd_tensor_t tin[kMax], tout[kMax];
    const hvd_tensor_t *pin[kMax], *pout[kMax];
    int64_t shape[1] = {(int64_t)count};
    for (int k = 0; k < n; ++k) {
        ins[k] = shared(count * sizeof(int32_t));
        outs[k] = in_place ? ins[k] : shared(count * sizeof(int32_t));
        for (size_t i = 0; i < count; ++i)
            ins[k][i] = (int32_t)mp_value(HVD_DTYPE_INT32, mp_rank, i + (size_t)k);
        tin[k] = mp_tensor(ins[k], HVD_DTYPE_INT32, 1, shape);
        tout[k] = mp_tensor(outs[k], HVD_DTYPE_INT32, 1, shape);
        pin[k] = &tin[k];
        pout[k] = &tout[k];
    }
    struct rlimit saved;
    int starving = starve && mp_rank == mp_size - 1 && mp_size > 1;
    if (starving) {
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
        int lowest_free = open("/dev/null", O_RDONLY);
        assert_true(lowest_free >= 0);
        close(lowest_free);
        struct rlimit tight = saved;
        tight.rlim_cur = (rlim_t)lowest_free;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
    }
    char name[64];
    snprintf(name, sizeof name, "grouped.%d.%d.%d", n, in_place, starve);
    hvd_op_params_t p = mp_reduce_params(name, HVD_OP_SUM);
    hvd_request_h req;
    hvd_status_t s = hvd_grouped_allreduce_enqueue(mp_ctx, pin, pout, n, &p, &req);
    if (s == HVD_OK) s = mp_wait(req);
    if (starving) assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    if (s != HVD_OK) mp_die("%s: %s", name, hvd_status_name(s));
    hvd_request_release(req);
    for (int k = 0; k < n; ++k) {
        for (size_t i = 0; i < count; ++i)
            if (outs[k][i] != mp_reference(HVD_DTYPE_INT32, HVD_OP_SUM, i + (size_t)k))
                mp_die("%s: tensor %d element %zu is %d, expected %g", name, k, i, outs[k][i],
                       mp_reference(HVD_DTYPE_INT32, HVD_OP_SUM, i + (size_t)k));
        if (!in_place) release(outs[k]);
        release(ins[k]);
    }
}

/* A grouped allreduce whose tensors include empty ones (data NULL, or a pointer between two
 * tensors that lie back to back): the others are reduced, the empty ones need nothing. */
static void test_empty_tensors_in_a_group(void **state) {
    (void)state;
    const size_t count = 5000;
    int32_t *region = shared(2 * count * sizeof(int32_t));
    int32_t *parts[4] = {region, NULL, region + count, region + 2 * count};
    int64_t shapes[4][1] = {{(int64_t)count}, {0}, {(int64_t)count}, {0}};
    hvd_tensor_t t[4];
    const hvd_tensor_t *p[4];
    for (int k = 0; k < 4; ++k) {
        for (size_t i = 0; i < (size_t)shapes[k][0]; ++i)
            parts[k][i] = (int32_t)mp_value(HVD_DTYPE_INT32, mp_rank, i + (size_t)k);
        t[k] = mp_tensor(parts[k], HVD_DTYPE_INT32, 1, shapes[k]);
        p[k] = &t[k];
    }
    hvd_op_params_t params = mp_reduce_params("grouped.empty", HVD_OP_SUM);
    hvd_request_h req;
    hvd_status_t s = hvd_grouped_allreduce_enqueue(mp_ctx, p, p, 4, &params, &req);
    if (s == HVD_OK) s = mp_wait(req);
    if (s != HVD_OK) mp_die("grouped allreduce with empty tensors: %s", hvd_status_name(s));
    hvd_request_release(req);
    for (int k = 0; k < 4; k += 2)
        for (size_t i = 0; i < count; ++i)
            if (parts[k][i] != mp_reference(HVD_DTYPE_INT32, HVD_OP_SUM, i + (size_t)k))
                mp_die("grouped with empty tensors: tensor %d element %zu is %d", k, i,
                       parts[k][i]);
    release(region);
}

static void test_grouped_regions(void **state) {
    (void)state;
    check_grouped(16, 3000, 1, 0); /* 16 regions: mapped */
    check_grouped(20, 3000, 1, 0); /* 20: slots */
    check_grouped(9, 3000, 0, 0);  /* 18 regions out of place: slots */
    check_grouped(8, 3000, 0, 0);  /* 16 out of place: mapped */
    check_grouped(4, 30000, 1, 1); /* a rank that cannot map: slots, not a failure */
    check_grouped(4, 30000, 1, 0); /* and then mapped again */
}

/* Float sums whose rounding depends on the order: the mapped path and the slots (malloc'd
 * buffers) must give the same bits, and so every rank the same result. */
static void test_same_bits_as_slots(void **state) {
    (void)state;
    const size_t count = 600000;
    const size_t bytes = count * sizeof(float);
    float *mapped = shared(bytes);
    float *plain = malloc(bytes);
    assert_non_null(plain);
    for (size_t i = 0; i < count; ++i) {
        float v = (float)(sin((double)i * 0.37 + mp_rank * 1.3) * pow(10.0, (double)(i % 9) - 3));
        mapped[i] = plain[i] = v;
    }
    allreduce("bits.mapped", HVD_DTYPE_FLOAT32, HVD_OP_SUM, mapped, mapped, count);
    allreduce("bits.slots", HVD_DTYPE_FLOAT32, HVD_OP_SUM, plain, plain, count);
    assert_memory_equal(mapped, plain, bytes);
    free(plain);
    release(mapped);
}

int main(void) {
    mp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_contract),
        cmocka_unit_test(test_every_dtype_and_op),
        cmocka_unit_test(test_offsets_inside_a_region),
        cmocka_unit_test(test_many_regions),
        cmocka_unit_test(test_mixed_memory),
        cmocka_unit_test(test_fused_pieces),
        cmocka_unit_test(test_grouped_regions),
        cmocka_unit_test(test_empty_tensors_in_a_group),
        cmocka_unit_test(test_allgather_and_broadcast),
        cmocka_unit_test(test_same_bits_as_slots),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    mp_finalize();
    return failed ? 1 : 0;
}
