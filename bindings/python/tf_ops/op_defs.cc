// SPDX-License-Identifier: Apache-2.0
// hvd.tensorflow's op definitions, through TensorFlow's stable C op API (tensorflow/c/ops.h),
// registered when tf.load_op_library loads this library. Every op carries the name ranks match
// it by and its process set's id as attributes, as Horovod's ops do.

#include <cstdint>
#include <vector>

#include "op_defs.h"
#include "tensorflow/c/ops.h"

namespace hvd_tf {
namespace {

// Each output i has input i's shape.
void same_shapes(TF_ShapeInferenceContext *ctx, TF_Status *s) {
    TF_ShapeHandle *h = TF_NewShapeHandle();
    int64_t n = TF_ShapeInferenceContextNumInputs(ctx);
    for (int64_t i = 0; i < n && TF_GetCode(s) == TF_OK; ++i) {
        TF_ShapeInferenceContextGetInput(ctx, static_cast<int>(i), h, s);
        if (TF_GetCode(s) == TF_OK)
            TF_ShapeInferenceContextSetOutput(ctx, static_cast<int>(i), h, s);
    }
    TF_DeleteShapeHandle(h);
}

// Output i: input i's shape with an unknown first dimension (known only at run time).
void rows_unknown_at(TF_ShapeInferenceContext *ctx, int i, TF_Status *s) {
    TF_ShapeHandle *in = TF_NewShapeHandle();
    TF_ShapeHandle *rest = TF_NewShapeHandle();
    TF_ShapeHandle *out = TF_NewShapeHandle();
    TF_ShapeInferenceContextGetInput(ctx, i, in, s);
    if (TF_GetCode(s) == TF_OK && TF_ShapeInferenceContextRankKnown(ctx, in)) {
        TF_ShapeHandle *first =
            TF_ShapeInferenceContextVectorFromSize(ctx, static_cast<size_t>(-1));
        TF_ShapeInferenceContextWithRankAtLeast(ctx, in, 1, in, s);
        if (TF_GetCode(s) == TF_OK)
            TF_ShapeInferenceContextSubshape(ctx, in, 1, INT64_MAX, rest, s);
        if (TF_GetCode(s) == TF_OK)
            TF_ShapeInferenceContextConcatenateShapes(ctx, first, rest, out, s);
        if (TF_GetCode(s) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, i, out, s);
        TF_DeleteShapeHandle(first);
    } else if (TF_GetCode(s) == TF_OK) {
        TF_ShapeInferenceContextSetUnknownShape(ctx, s);
    }
    TF_DeleteShapeHandle(in);
    TF_DeleteShapeHandle(rest);
    TF_DeleteShapeHandle(out);
}

void rows_unknown(TF_ShapeInferenceContext *ctx, TF_Status *s) {
    rows_unknown_at(ctx, 0, s);
}

// Every output i: input i's shape with an unknown first dimension (grouped ops).
void each_rows_unknown(TF_ShapeInferenceContext *ctx, TF_Status *s) {
    int64_t n = TF_ShapeInferenceContextNumInputs(ctx);
    for (int64_t i = 0; i < n && TF_GetCode(s) == TF_OK; ++i)
        rows_unknown_at(ctx, static_cast<int>(i), s);
}

// Alltoall: the received rows (unknown count) and the rows from each member (a vector).
void alltoall_shapes(TF_ShapeInferenceContext *ctx, TF_Status *s) {
    rows_unknown(ctx, s);
    if (TF_GetCode(s) != TF_OK) return;
    TF_ShapeHandle *v = TF_ShapeInferenceContextVectorFromSize(ctx, static_cast<size_t>(-1));
    TF_ShapeInferenceContextSetOutput(ctx, 1, v, s);
    TF_DeleteShapeHandle(v);
}

void scalar_output(TF_ShapeInferenceContext *ctx, TF_Status *s) {
    TF_ShapeHandle *h = TF_ShapeInferenceContextScalar(ctx);
    TF_ShapeInferenceContextSetOutput(ctx, 0, h, s);
    TF_DeleteShapeHandle(h);
}

void no_outputs(TF_ShapeInferenceContext *, TF_Status *) {}

struct OpSpec {
    const char *name;
    std::vector<const char *> attrs, inputs, outputs;
    void (*shape_fn)(TF_ShapeInferenceContext *, TF_Status *);
    bool stateful;
};

const char *const kNaming[] = {"op_name: string = ''", "use_node_name: bool = false",
                               "process_set: int = 0"};
const char *const kReduce[] = {"reduce_op: int = 1", "prescale: float = 1.0",
                               "postscale: float = 1.0"};

bool register_op(const OpSpec &spec, bool reduces, bool typed) {
    TF_OpDefinitionBuilder *b = TF_NewOpDefinitionBuilder(spec.name);
    if (typed) TF_OpDefinitionBuilderAddAttr(b, kTypeAttr);
    for (const char *a : kNaming)
        TF_OpDefinitionBuilderAddAttr(b, a);
    if (reduces)
        for (const char *a : kReduce)
            TF_OpDefinitionBuilderAddAttr(b, a);
    for (const char *a : spec.attrs)
        TF_OpDefinitionBuilderAddAttr(b, a);
    for (const char *i : spec.inputs)
        TF_OpDefinitionBuilderAddInput(b, i);
    for (const char *o : spec.outputs)
        TF_OpDefinitionBuilderAddOutput(b, o);
    TF_OpDefinitionBuilderSetShapeInferenceFunction(b, spec.shape_fn);
    // Ops without inputs (join, barrier) must never be folded or pruned away.
    TF_OpDefinitionBuilderSetIsStateful(b, spec.stateful);
    TF_Status *s = TF_NewStatus();
    TF_RegisterOpDefinition(b, s);
    bool ok = TF_GetCode(s) == TF_OK;
    TF_DeleteStatus(s);
    return ok;
}

}  // namespace

const char *const kTypeAttr =
    "T: {uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}";
const char *const kTypeListAttr =
    "T: list({uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool})";

bool register_ops() {
    bool ok = true;
    ok &= register_op({"HvdAllreduce", {}, {"tensor: T"}, {"output: T"}, same_shapes, false}, true,
                      true);
    ok &= register_op({"HvdGroupedAllreduce",
                       {kTypeListAttr},
                       {"tensors: T"},
                       {"outputs: T"},
                       same_shapes,
                       false},
                      true, false);
    ok &= register_op({"HvdGroupedAllgather",
                       {kTypeListAttr},
                       {"tensors: T"},
                       {"outputs: T"},
                       each_rows_unknown,
                       false},
                      false, false);
    ok &= register_op({"HvdGroupedReducescatter",
                       {kTypeListAttr},
                       {"tensors: T"},
                       {"outputs: T"},
                       each_rows_unknown,
                       false},
                      true, false);
    ok &= register_op({"HvdAllgather", {}, {"tensor: T"}, {"output: T"}, rows_unknown, false},
                      false, true);
    ok &= register_op(
        {"HvdBroadcast", {"root_rank: int = 0"}, {"tensor: T"}, {"output: T"}, same_shapes, false},
        false, true);
    ok &= register_op({"HvdAlltoall",
                       {},
                       {"tensor: T", "splits: int32"},
                       {"output: T", "received_splits: int32"},
                       alltoall_shapes,
                       false},
                      false, true);
    ok &= register_op({"HvdReducescatter", {}, {"tensor: T"}, {"output: T"}, rows_unknown, false},
                      true, true);
    ok &=
        register_op({"HvdJoin", {}, {}, {"last_joined: int32"}, scalar_output, true}, false, false);
    ok &= register_op({"HvdBarrier", {}, {}, {}, no_outputs, true}, false, false);
    return ok;
}

}  // namespace hvd_tf
