// SPDX-License-Identifier: Apache-2.0
#include "common/dtype.h"

namespace hvd {

size_t dtype_size(int32_t dtype) {
    switch (dtype) {
        case HVD_DTYPE_UINT8:
        case HVD_DTYPE_INT8:
        case HVD_DTYPE_BOOL:
            return 1;
        case HVD_DTYPE_UINT16:
        case HVD_DTYPE_INT16:
        case HVD_DTYPE_FLOAT16:
        case HVD_DTYPE_BFLOAT16:
            return 2;
        case HVD_DTYPE_INT32:
        case HVD_DTYPE_FLOAT32:
            return 4;
        case HVD_DTYPE_INT64:
        case HVD_DTYPE_FLOAT64:
            return 8;
        default:
            return 0;
    }
}

const char *dtype_name(int32_t dtype) {
    static const char *const kNames[kNumDtypes] = {"uint8",   "int8",  "uint16",  "int16",
                                                   "int32",   "int64", "float16", "float32",
                                                   "float64", "bool",  "bfloat16"};
    return dtype_valid(dtype) ? kNames[dtype] : "invalid";
}

const char *reduce_op_name(int32_t op) {
    switch (op) {
        case HVD_OP_AVERAGE:
            return "average";
        case HVD_OP_SUM:
            return "sum";
        case HVD_OP_ADASUM:
            return "adasum";
        case HVD_OP_MIN:
            return "min";
        case HVD_OP_MAX:
            return "max";
        case HVD_OP_PRODUCT:
            return "product";
        default:
            return "invalid";
    }
}

}  // namespace hvd
