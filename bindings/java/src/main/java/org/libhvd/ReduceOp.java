// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** Reductions of allreduce and reducescatter ({@code hvd_reduce_op_t}, Horovod's numbering). */
public enum ReduceOp {
    /** Sum, then multiplied by 1/size (after postscale). */
    AVERAGE(0),
    SUM(1),
    /** Needs a float dtype and a power-of-two set size. */
    ADASUM(2),
    MIN(3),
    MAX(4),
    PRODUCT(5);

    private final int code;

    ReduceOp(int code) {
        this.code = code;
    }

    /** The C ABI's value. */
    public int code() {
        return code;
    }
}
