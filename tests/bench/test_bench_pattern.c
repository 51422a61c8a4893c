/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of hvd_bench's own logic: element encoding, test pattern, expected results,
 * the checker (it must catch a wrong element) and the command line. No libhvd context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the headers it needs, which it does not include itself */

#include <getopt.h>
#include <string.h>

#include <hvd/hvd.h>

#include "bench_dtype.h"
#include "bench_options.h"
#include "bench_pattern.h"

static uint16_t stored16(int32_t dtype, double v) {
    uint16_t u = 0;
    bench_store(dtype, &u, 0, v);
    return u;
}

/* Bit patterns from the IEEE 754 binary16 and bfloat16 definitions. */
static void test_half_encoding(void **state) {
    (void)state;
    assert_int_equal(stored16(HVD_DTYPE_FLOAT16, 1.0), 0x3C00);
    assert_int_equal(stored16(HVD_DTYPE_FLOAT16, -2.0), 0xC000);
    assert_int_equal(stored16(HVD_DTYPE_FLOAT16, 65504.0), 0x7BFF);
    assert_int_equal(stored16(HVD_DTYPE_FLOAT16, 1.0 / 3.0), 0x3555);
    assert_int_equal(stored16(HVD_DTYPE_FLOAT16, 1e6), 0x7C00); /* overflow: inf */
    assert_int_equal(stored16(HVD_DTYPE_FLOAT16, 5.9604644775390625e-8), 0x0001); /* 2^-24 */
    assert_int_equal(stored16(HVD_DTYPE_BFLOAT16, 1.0), 0x3F80);
    assert_int_equal(stored16(HVD_DTYPE_BFLOAT16, 1.0 + 1.0 / 256), 0x3F80); /* tie: even */
    assert_int_equal(stored16(HVD_DTYPE_BFLOAT16, 1.0 + 3.0 / 256), 0x3F82); /* tie: up */
    uint16_t h = 0x3555;
    assert_true(bench_load(HVD_DTYPE_FLOAT16, &h, 0) == 0.333251953125);
}

static void test_integer_encoding(void **state) {
    (void)state;
    int8_t i8 = 0;
    bench_store(HVD_DTYPE_INT8, &i8, 0, -3.9);
    assert_int_equal(i8, -3); /* toward zero */
    uint8_t b = 0;
    bench_store(HVD_DTYPE_BOOL, &b, 0, 5.0);
    assert_int_equal(b, 1);
    int64_t i64 = 0;
    bench_store(HVD_DTYPE_INT64, &i64, 0, 4096.0);
    assert_true(bench_load(HVD_DTYPE_INT64, &i64, 0) == 4096.0);
}

/* The expected sum is recomputed here from the pattern's definition, (i + 7 r) & 63. */
static void test_reduced_sum(void **state) {
    (void)state;
    float block[BENCH_PERIOD];
    bench_block_reduced(HVD_DTYPE_FLOAT32, HVD_OP_SUM, 3, 0, block);
    for (int i = 0; i < BENCH_PERIOD; ++i) {
        int want = (i & 63) + ((i + 7) & 63) + ((i + 14) & 63);
        assert_true(block[i] == (float)want);
    }
}

static void test_reduced_average_and_bool(void **state) {
    (void)state;
    int32_t avg[BENCH_PERIOD];
    bench_block_reduced(HVD_DTYPE_INT32, HVD_OP_AVERAGE, 3, 0, avg);
    for (int i = 0; i < BENCH_PERIOD; ++i)
        assert_int_equal(avg[i], ((i & 63) + ((i + 7) & 63) + ((i + 14) & 63)) / 3);
    uint8_t any[BENCH_PERIOD], all[BENCH_PERIOD];
    bench_block_reduced(HVD_DTYPE_BOOL, HVD_OP_SUM, 2, 0, any);
    bench_block_reduced(HVD_DTYPE_BOOL, HVD_OP_MIN, 2, 0, all);
    for (int i = 0; i < BENCH_PERIOD; ++i) {
        int a = i & 1, b2 = (i + 7) & 1; /* rank 0 and rank 1 values */
        assert_int_equal(any[i], a | b2);
        assert_int_equal(all[i], a & b2);
    }
}

/* Tensors of different ranks and of different --many slots must differ. */
static void test_seeds_distinguish_tensors(void **state) {
    (void)state;
    float a[BENCH_PERIOD], b[BENCH_PERIOD], c[BENCH_PERIOD];
    bench_block_input(HVD_DTYPE_FLOAT32, HVD_OP_SUM, bench_seed(0, 0), a);
    bench_block_input(HVD_DTYPE_FLOAT32, HVD_OP_SUM, bench_seed(1, 0), b);
    bench_block_input(HVD_DTYPE_FLOAT32, HVD_OP_SUM, bench_seed(0, 1), c);
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
}

static void test_compare_finds_a_wrong_element(void **state) {
    (void)state;
    enum { N = 1000 };
    static float buf[N];
    float block[BENCH_PERIOD];
    bench_mismatch_t m;
    bench_block_input(HVD_DTYPE_FLOAT32, HVD_OP_SUM, 5, block);
    bench_fill(buf, N, block, sizeof(float));
    for (int i = 0; i < N; ++i)
        assert_true(buf[i] == (float)((i % 64 + 5) & 63));
    assert_int_equal(bench_compare(HVD_DTYPE_FLOAT32, HVD_OP_SUM, buf, N, block, 0, &m), 0);
    buf[777] += 1.0f;
    assert_int_equal(bench_compare(HVD_DTYPE_FLOAT32, HVD_OP_SUM, buf, N, block, 0, &m), 1);
    assert_int_equal(m.index, 777);
    assert_true(m.want == (double)((777 % 64 + 5) & 63) && m.got == m.want + 1.0);
    /* A slice starting at element 100 matches with phase 100, not with phase 0. */
    assert_int_equal(bench_compare(HVD_DTYPE_FLOAT32, HVD_OP_SUM, buf + 100, 600, block, 100, &m),
                     0);
    assert_true(bench_compare(HVD_DTYPE_FLOAT32, HVD_OP_SUM, buf + 100, 600, block, 0, &m) > 500);
}

/* Average may differ from the exact quotient by the dtype's rounding, nothing more. */
static void test_average_tolerance(void **state) {
    (void)state;
    float want[BENCH_PERIOD], got[BENCH_PERIOD];
    bench_mismatch_t m;
    bench_block_reduced(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, 3, 0, want);
    for (int i = 0; i < BENCH_PERIOD; ++i)
        got[i] = (float)((i & 63) + ((i + 7) & 63) + ((i + 14) & 63)) * (1.0f / 3.0f);
    assert_int_equal(
        bench_compare(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, got, BENCH_PERIOD, want, 0, &m), 0);
    got[3] *= 1.001f;
    assert_int_equal(
        bench_compare(HVD_DTYPE_FLOAT32, HVD_OP_AVERAGE, got, BENCH_PERIOD, want, 0, &m), 1);
}

static int parse(bench_options_t *o, int argc, const char **argv) {
    optind = 0; /* glibc: restart getopt from scratch */
    return bench_parse_options(argc, (char **)argv, 0, o);
}

static void test_options(void **state) {
    (void)state;
    bench_options_t o;
    assert_int_equal(bench_parse_size("64K"), 65536);
    assert_int_equal(bench_parse_size("1.5M"), 1572864);
    assert_int_equal(bench_parse_size("4GB"), (size_t)4 << 30);
    assert_int_equal(bench_parse_size("12Q"), 0);

    const char *defaults[] = {"hvd_bench"};
    assert_int_equal(parse(&o, 1, defaults), 0);
    /* 8, 32, ..., 128M (13 sizes), 256M, and the extra 64M */
    assert_int_equal(o.nsizes, 15);
    assert_int_equal(o.sizes[0], 8);
    assert_int_equal(o.sizes[12], (size_t)64 << 20);
    assert_int_equal(o.sizes[14], (size_t)256 << 20);
    assert_int_equal(o.check, 1);

    const char *issue_flags[] = {"hvd_bench", "-b", "8", "-e", "64K", "-c", "0", "-x", "none"};
    assert_int_equal(parse(&o, 9, issue_flags), 0);
    assert_int_equal(o.check, 0); /* -c 0|1 is the check, -c NAME the collective */
    assert_int_equal(o.coll, BENCH_ALLREDUCE);
    assert_int_equal(o.nsizes, 8);

    const char *many[] = {"hvd_bench", "--many", "16", "-c", "allgather", "-i", "1"};
    assert_int_equal(parse(&o, 7, many), 0);
    assert_int_equal(o.many, 16);
    assert_int_equal(o.inplace, 1); /* into the caller's buffer */
    assert_int_equal(bench_owns_output(&o), 0);
    assert_int_equal(o.sizes[o.nsizes - 1], (size_t)4 << 20);
    const char *owned[] = {"hvd_bench", "-c", "allgather", "-i", "0"};
    assert_int_equal(parse(&o, 5, owned), 0);
    assert_int_equal(bench_owns_output(&o), 1); /* library-owned output */
    const char *a2a[] = {"hvd_bench", "-c", "alltoall", "-i", "1"};
    assert_int_equal(parse(&o, 5, a2a), 0);
    assert_int_equal(o.inplace, 0);
    assert_int_equal(bench_owns_output(&o), 1);

    const char *bad_op[] = {"hvd_bench", "-d", "bool", "-o", "avg"};
    assert_int_equal(parse(&o, 5, bad_op), 2);
    const char *bad_rs[] = {"hvd_bench", "-c", "reducescatter", "-o", "max"};
    assert_int_equal(parse(&o, 5, bad_rs), 2);
    const char *too_big[] = {"hvd_bench", "--many", "64", "-e", "256M"};
    assert_int_equal(parse(&o, 5, too_big), 2);
    const char *bad_size[] = {"hvd_bench", "-b", "1X"};
    assert_int_equal(parse(&o, 3, bad_size), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_encoding),
        cmocka_unit_test(test_integer_encoding),
        cmocka_unit_test(test_reduced_sum),
        cmocka_unit_test(test_reduced_average_and_bool),
        cmocka_unit_test(test_seeds_distinguish_tensors),
        cmocka_unit_test(test_compare_finds_a_wrong_element),
        cmocka_unit_test(test_average_tolerance),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
