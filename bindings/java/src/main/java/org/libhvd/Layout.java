// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/**
 * Sizes and field offsets of hvd.h's structs on 64-bit Linux, and their field_mask bits
 * (tests/bindings checks every value against what the C compiler says).
 */
final class Layout {
    static final int ABI_VERSION = 1;
    static final int MAX_NDIM = 32;
    static final int MAX_NAME = 1024;
    static final int UNIQUE_ID_BYTES = 128;

    static final int SIZEOF_TENSOR = 48;
    static final int TENSOR_FIELD_MASK = 0;
    static final int TENSOR_DATA = 8;
    static final int TENSOR_DTYPE = 16;
    static final int TENSOR_NDIM = 20;
    static final int TENSOR_SHAPE = 24;
    static final int TENSOR_DEVICE_TYPE = 32;
    static final int TENSOR_DEVICE_ID = 36;
    static final int TENSOR_READY_EVENT = 40;

    static final int SIZEOF_OP_PARAMS = 80;
    static final int OP_PARAMS_FIELD_MASK = 0;
    static final int OP_PARAMS_NAME = 8;
    static final int OP_PARAMS_PROCESS_SET = 16;
    static final int OP_PARAMS_REDUCE_OP = 24;
    static final int OP_PARAMS_ROOT_RANK = 28;
    static final int OP_PARAMS_PRESCALE = 32;
    static final int OP_PARAMS_POSTSCALE = 40;
    static final int OP_PARAMS_SPLITS = 48;
    static final int OP_PARAMS_TIMEOUT_MS = 56;
    static final int OP_PARAMS_STREAM = 64;
    static final int OP_PARAMS_NUM_SPLITS = 72;

    static final int SIZEOF_UNIQUE_ID = 128;
    static final int UNIQUE_ID_INTERNAL = 0;

    static final int SIZEOF_INIT_PARAMS = 152;
    static final int INIT_PARAMS_FIELD_MASK = 0;
    static final int INIT_PARAMS_RANK = 8;
    static final int INIT_PARAMS_SIZE = 12;
    static final int INIT_PARAMS_UNIQUE_ID = 16;
    static final int INIT_PARAMS_TIMEOUT_MS = 144;

    static final long TENSOR_FIELD_READY_EVENT = 1L << 0;

    static final long OP_FIELD_NAME = 1L << 0;
    static final long OP_FIELD_PROCESS_SET = 1L << 1;
    static final long OP_FIELD_REDUCE_OP = 1L << 2;
    static final long OP_FIELD_SCALE = 1L << 3;
    static final long OP_FIELD_ROOT = 1L << 4;
    static final long OP_FIELD_SPLITS = 1L << 5;
    static final long OP_FIELD_TIMEOUT = 1L << 6;
    static final long OP_FIELD_STREAM = 1L << 7;

    static final long INIT_FIELD_RANK = 1L << 0;
    static final long INIT_FIELD_UNIQUE_ID = 1L << 1;
    static final long INIT_FIELD_TIMEOUT = 1L << 2;

    static final int DEVICE_CPU = 1;
    static final int DEVICE_CUDA = 2;

    private Layout() {}
}
