// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** Element types of tensors ({@code hvd_dtype_t}). */
public enum DType {
    UINT8(0, 1),
    INT8(1, 1),
    UINT16(2, 2),
    INT16(3, 2),
    INT32(4, 4),
    INT64(5, 8),
    /** IEEE half precision, held in a {@code ShortBuffer} or {@code ByteBuffer}. */
    FLOAT16(6, 2),
    FLOAT32(7, 4),
    FLOAT64(8, 8),
    /** One byte, 0 or 1; Sum/Max are "or", Min/Product "and". */
    BOOL(9, 1),
    /** The upper half of a float32, held in a {@code ShortBuffer} or {@code ByteBuffer}. */
    BFLOAT16(10, 2);

    private final int code;
    private final int size;

    DType(int code, int size) {
        this.code = code;
        this.size = size;
    }

    /** The C ABI's value. */
    public int code() {
        return code;
    }

    /** Bytes per element. */
    public int elementSize() {
        return size;
    }

    /** The dtype of a C ABI value. */
    public static DType of(int code) {
        for (DType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        throw new IllegalArgumentException("libhvd dtype code " + code + " is unknown to this binding");
    }
}
