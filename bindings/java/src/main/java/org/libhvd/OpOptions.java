// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import java.util.Arrays;

/**
 * Optional parameters of one collective ({@code hvd_op_params_t}); anything left unset takes
 * the library's default. Fluent: {@code OpOptions.named("grad.w").op(ReduceOp.AVERAGE)}.
 */
public final class OpOptions {
    String name;
    ProcessSet processSet;
    ReduceOp op;
    Double prescale;
    Double postscale;
    Integer root;
    int[] splits;
    Long timeoutMs;

    public static OpOptions create() {
        return new OpOptions();
    }

    /** Options with the cross-rank matching name set. */
    public static OpOptions named(String name) {
        return new OpOptions().name(name);
    }

    /** The name ranks match this op by (default: an auto-name per op type and context). */
    public OpOptions name(String value) {
        name = value;
        return this;
    }

    /** The process set the op runs in (default: all ranks). */
    public OpOptions processSet(ProcessSet value) {
        processSet = value;
        return this;
    }

    /** The reduction of allreduce or reducescatter (default SUM). */
    public OpOptions op(ReduceOp value) {
        op = value;
        return this;
    }

    /** Factor applied to every input before the reduction (default 1). */
    public OpOptions prescale(double value) {
        prescale = value;
        return this;
    }

    /** Factor applied to the result (default 1). */
    public OpOptions postscale(double value) {
        postscale = value;
        return this;
    }

    /** Broadcast's root, a rank of the process set (default 0). */
    public OpOptions root(int value) {
        root = value;
        return this;
    }

    /** Alltoall: rows sent to each rank of the set, in set order (default an even split). */
    public OpOptions splits(int... value) {
        splits = value.clone();
        return this;
    }

    /** The op's own timeout in ms; negative for none (default: the context's op timeout). */
    public OpOptions timeoutMs(long value) {
        timeoutMs = value;
        return this;
    }

    @Override
    public String toString() {
        return "OpOptions(name=" + name + ", op=" + op + ", root=" + root + ", splits=" + Arrays.toString(splits) + ")";
    }
}
