// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import java.util.concurrent.TimeUnit;

/**
 * One enqueued collective ({@code hvd_request_h}), like a {@code Future}: {@link #test()}
 * polls, {@link #await()} blocks (bounded by the op timeout), {@link #close()} releases it.
 * It holds the tensors it was enqueued on, so their buffers stay alive while it runs. A
 * request that failed throws its {@link HvdException} from test, await and the result getters.
 */
public final class Request implements AutoCloseable {
    private final NativeApi api = NativeLib.get();
    private volatile Pointer handle;
    private Object keepAlive;
    private final Tensor[] callerOutputs;
    private final int setSize;

    Request(Pointer handle, Object keepAlive, Tensor[] callerOutputs, int setSize) {
        this.handle = handle;
        this.keepAlive = keepAlive;
        this.callerOutputs = callerOutputs;
        this.setSize = setSize;
    }

    private Pointer live() {
        Pointer h = handle;
        if (h == null) {
            throw new IllegalStateException("the request was closed");
        }
        return h;
    }

    private boolean settle(int status) {
        if (status == Status.INPROGRESS) {
            return false;
        }
        if (status < 0) {
            String detail = message();
            throw HvdException.of(status, detail.isEmpty() ? NativeLib.lastError() : detail);
        }
        return true;
    }

    /** True once the collective completed; false while it runs. Never blocks. */
    public boolean test() {
        return settle(api.hvd_request_test(live()));
    }

    /** Waits until the collective completes (bounded by its op timeout). */
    public Request await() {
        settle(api.hvd_request_wait(live(), -1));
        return this;
    }

    /** Waits at most the given time; true when the collective completed, false when not yet. */
    public boolean await(long timeout, TimeUnit unit) {
        return settle(api.hvd_request_wait(live(), Math.max(0, unit.toMillis(timeout))));
    }

    /**
     * Output i (0 for a single-tensor op) of a completed request: the caller's own output
     * tensor, or a copy of a library-owned output (allgather, alltoall, reducescatter).
     */
    public Tensor output(int i) {
        Memory desc = new Memory(Layout.SIZEOF_TENSOR);
        desc.clear();
        int st = api.hvd_request_output(live(), i, desc);
        if (!settle(st)) {
            throw new IllegalStateException("the request is still running");
        }
        if (callerOutputs != null && i < callerOutputs.length && callerOutputs[i] != null) {
            return callerOutputs[i];
        }
        return Tensor.copyOfNative(desc);
    }

    public Tensor output() {
        return output(0);
    }

    /** Alltoall: rows received from each rank of the set, in set order. */
    public int[] receivedSplits() {
        int[] splits = new int[Math.max(setSize, 0)];
        if (!settle(api.hvd_request_received_splits(live(), splits, splits.length))) {
            throw new IllegalStateException("the request is still running");
        }
        return splits;
    }

    /** The integer result: for a join, the rank (in its set) that joined last. */
    public long value() {
        LongByReference v = new LongByReference();
        if (!settle(api.hvd_request_value(live(), v))) {
            throw new IllegalStateException("the request is still running");
        }
        return v.getValue();
    }

    /** The request's error detail; empty when it succeeded. */
    public String message() {
        Pointer h = live();
        long n = api.hvd_request_message(h, null, 0);
        byte[] buf = new byte[(int) Math.min(n + 1, 1 << 20)];
        api.hvd_request_message(h, buf, buf.length);
        return NativeLib.cString(buf);
    }

    /**
     * Releases the request. One still running is waited for first (bounded by its op
     * timeout), since its buffers must outlive it. Idempotent.
     */
    @Override
    public void close() {
        Pointer h = handle;
        if (h == null) {
            return;
        }
        if (api.hvd_request_test(h) == Status.INPROGRESS) {
            api.hvd_request_wait(h, -1);
        }
        NativeLib.check(api.hvd_request_release(h));
        handle = null;
        keepAlive = null;
    }
}
