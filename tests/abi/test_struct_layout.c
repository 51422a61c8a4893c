/* SPDX-License-Identifier: Apache-2.0 */
/* The binary layout of every public struct and the value of every public constant, as a C
 * compiler sees hvd.h, against the numbers that version 1 of the ABI promised on x86-64
 * (LP64). Bindings that re-declare these structs (ctypes, JNA, Julia) rely on exactly these
 * numbers, and constants compiled into callers can never change: a failure here is an ABI
 * break, not a test to update, unless HVD_ABI_VERSION (the SONAME) is bumped with it.
 * abidiff (abi.abidiff) sees the structs too, but not macros or the anonymous enums of
 * field bits, which are only here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <hvd/hvd.h>

#define SKIPPED 77 /* ctest SKIP_RETURN_CODE: the numbers below are x86-64's */

typedef struct {
    const char *what;
    int64_t actual, expected;
} fact_t;

/* Each row: what, the compiler's value, the ABI's value. */
/* clang-format off */
/* C99 has no alignof: the offset of a member that follows a char is its alignment. */
#define ALIGNOF(type) offsetof(struct { char c; type t; }, t)
#define STRUCT(type, size, align) \
    {#type " size", sizeof(type), size}, {#type " align", ALIGNOF(type), align}
#define FIELD(type, member, offset, size) \
    {#type "." #member " offset", offsetof(type, member), offset}, \
    {#type "." #member " size", sizeof(((type *)0)->member), size}
#define CONST(name, value) {#name, (int64_t)(name), (int64_t)(value)}
/* clang-format on */

/* Prints every disagreement (not only the first) and returns how many there were. */
static int count_mismatches(const fact_t *facts, size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (facts[i].actual == facts[i].expected) continue;
        fprintf(stderr, "ABI: %s is %lld, version 1 of the ABI has %lld\n", facts[i].what,
                (long long)facts[i].actual, (long long)facts[i].expected);
        ++bad;
    }
    return bad;
}

#define CHECK_FACTS(table) \
    assert_int_equal(count_mismatches(table, sizeof table / sizeof *table), 0)

static void tensor_layout(void **state) {
    (void)state;
    const fact_t facts[] = {
        STRUCT(hvd_tensor_t, 48, 8),
        FIELD(hvd_tensor_t, field_mask, 0, 8),
        FIELD(hvd_tensor_t, data, 8, 8),
        FIELD(hvd_tensor_t, dtype, 16, 4),
        FIELD(hvd_tensor_t, ndim, 20, 4),
        FIELD(hvd_tensor_t, shape, 24, 8),
        FIELD(hvd_tensor_t, device_type, 32, 4),
        FIELD(hvd_tensor_t, device_id, 36, 4),
        FIELD(hvd_tensor_t, ready_event, 40, 8),
    };
    CHECK_FACTS(facts);
}

static void op_params_layout(void **state) {
    (void)state;
    const fact_t facts[] = {
        STRUCT(hvd_op_params_t, 80, 8),           FIELD(hvd_op_params_t, field_mask, 0, 8),
        FIELD(hvd_op_params_t, name, 8, 8),       FIELD(hvd_op_params_t, process_set, 16, 8),
        FIELD(hvd_op_params_t, reduce_op, 24, 4), FIELD(hvd_op_params_t, root_rank, 28, 4),
        FIELD(hvd_op_params_t, prescale, 32, 8),  FIELD(hvd_op_params_t, postscale, 40, 8),
        FIELD(hvd_op_params_t, splits, 48, 8),    FIELD(hvd_op_params_t, timeout_ms, 56, 8),
        FIELD(hvd_op_params_t, stream, 64, 8),    FIELD(hvd_op_params_t, num_splits, 72, 4),
    };
    CHECK_FACTS(facts);
}

static void init_params_layout(void **state) {
    (void)state;
    const fact_t facts[] = {
        STRUCT(hvd_unique_id_t, 128, 1),
        FIELD(hvd_unique_id_t, internal, 0, 128),
        STRUCT(hvd_init_params_t, 152, 8),
        FIELD(hvd_init_params_t, field_mask, 0, 8),
        FIELD(hvd_init_params_t, rank, 8, 4),
        FIELD(hvd_init_params_t, size, 12, 4),
        FIELD(hvd_init_params_t, unique_id, 16, 128),
        FIELD(hvd_init_params_t, timeout_ms, 144, 8),
    };
    CHECK_FACTS(facts);
}

/* Enums are passed by value (hvd_status_t) or stored in int32_t fields: 4 bytes each. */
static void enum_and_handle_sizes(void **state) {
    (void)state;
    const fact_t facts[] = {
        {"sizeof(hvd_status_t)", sizeof(hvd_status_t), 4},
        {"sizeof(hvd_dtype_t)", sizeof(hvd_dtype_t), 4},
        {"sizeof(hvd_device_type_t)", sizeof(hvd_device_type_t), 4},
        {"sizeof(hvd_reduce_op_t)", sizeof(hvd_reduce_op_t), 4},
        {"sizeof(hvd_context_h)", sizeof(hvd_context_h), 8},
        {"sizeof(hvd_process_set_h)", sizeof(hvd_process_set_h), 8},
        {"sizeof(hvd_request_h)", sizeof(hvd_request_h), 8},
    };
    CHECK_FACTS(facts);
}

static void status_values(void **state) {
    (void)state;
    const fact_t facts[] = {
        CONST(HVD_OK, 0),
        CONST(HVD_INPROGRESS, 1),
        CONST(HVD_ERR_INVALID_ARG, -1),
        CONST(HVD_ERR_NO_MEMORY, -2),
        CONST(HVD_ERR_UNSUPPORTED, -3),
        CONST(HVD_ERR_VERSION, -4),
        CONST(HVD_ERR_NOT_READY, -5),
        CONST(HVD_ERR_BUSY, -6),
        CONST(HVD_ERR_MISMATCH, -7),
        CONST(HVD_ERR_TIMED_OUT, -8),
        CONST(HVD_ERR_ABORTED, -9),
        CONST(HVD_ERR_PEER_FAILED, -10),
        CONST(HVD_ERR_DEVICE, -11),
        CONST(HVD_ERR_TRANSPORT, -12),
        CONST(HVD_ERR_INTERNAL, -13),
    };
    CHECK_FACTS(facts);
}

static void enum_values(void **state) {
    (void)state;
    const fact_t facts[] = {
        CONST(HVD_DTYPE_UINT8, 0),   CONST(HVD_DTYPE_INT8, 1),      CONST(HVD_DTYPE_UINT16, 2),
        CONST(HVD_DTYPE_INT16, 3),   CONST(HVD_DTYPE_INT32, 4),     CONST(HVD_DTYPE_INT64, 5),
        CONST(HVD_DTYPE_FLOAT16, 6), CONST(HVD_DTYPE_FLOAT32, 7),   CONST(HVD_DTYPE_FLOAT64, 8),
        CONST(HVD_DTYPE_BOOL, 9),    CONST(HVD_DTYPE_BFLOAT16, 10), CONST(HVD_DEVICE_CPU, 1),
        CONST(HVD_DEVICE_CUDA, 2),   CONST(HVD_OP_AVERAGE, 0),      CONST(HVD_OP_SUM, 1),
        CONST(HVD_OP_ADASUM, 2),     CONST(HVD_OP_MIN, 3),          CONST(HVD_OP_MAX, 4),
        CONST(HVD_OP_PRODUCT, 5),
    };
    CHECK_FACTS(facts);
}

static void field_bits_and_limits(void **state) {
    (void)state;
    const fact_t facts[] = {
        CONST(HVD_TENSOR_FIELD_READY_EVENT, 1u << 0),
        CONST(HVD_OP_FIELD_NAME, 1u << 0),
        CONST(HVD_OP_FIELD_PROCESS_SET, 1u << 1),
        CONST(HVD_OP_FIELD_REDUCE_OP, 1u << 2),
        CONST(HVD_OP_FIELD_SCALE, 1u << 3),
        CONST(HVD_OP_FIELD_ROOT, 1u << 4),
        CONST(HVD_OP_FIELD_SPLITS, 1u << 5),
        CONST(HVD_OP_FIELD_TIMEOUT, 1u << 6),
        CONST(HVD_OP_FIELD_STREAM, 1u << 7),
        CONST(HVD_INIT_FIELD_RANK, 1u << 0),
        CONST(HVD_INIT_FIELD_UNIQUE_ID, 1u << 1),
        CONST(HVD_INIT_FIELD_TIMEOUT, 1u << 2),
        CONST(HVD_FEATURE_UCX, 1u << 0),
        CONST(HVD_FEATURE_CUDA, 1u << 1),
        CONST(HVD_FEATURE_NCCL, 1u << 2),
        CONST(HVD_FEATURE_HWLOC, 1u << 3),
        CONST(HVD_MAX_NDIM, 32),
        CONST(HVD_MAX_NAME, 1024),
        CONST(HVD_UNIQUE_ID_BYTES, 128),
        CONST(HVD_ABI_VERSION, 1),
        CONST(HVD_VERSION(1, 2, 3), 10203),
    };
    CHECK_FACTS(facts);
}

int main(void) {
#if !(defined(__x86_64__) && defined(__LP64__))
    printf("test_struct_layout: the expected layout is x86-64's; skipped on this target\n");
    return SKIPPED;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensor_layout),         cmocka_unit_test(op_params_layout),
        cmocka_unit_test(init_params_layout),    cmocka_unit_test(enum_and_handle_sizes),
        cmocka_unit_test(status_values),         cmocka_unit_test(enum_values),
        cmocka_unit_test(field_bits_and_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
