// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;

/**
 * A process set ({@code hvd_process_set_h}) made by {@link Hvd#createProcessSet}. Ranks
 * outside the set hold one too ({@link #rank()} is -1 there). {@link #close()} destroys it,
 * which like its creation is collective over all ranks.
 */
public final class ProcessSet implements AutoCloseable {
    private final Hvd owner;
    private Pointer handle;

    ProcessSet(Hvd owner, Pointer handle) {
        this.owner = owner;
        this.handle = handle;
    }

    Pointer handle() {
        if (handle == null) {
            throw new IllegalStateException("the process set was destroyed");
        }
        return handle;
    }

    /** This rank's rank in the set, -1 when it is not a member. */
    public int rank() {
        IntByReference r = new IntByReference();
        NativeLib.check(NativeLib.get().hvd_rank(owner.handle(), handle(), r));
        return r.getValue();
    }

    public int size() {
        IntByReference r = new IntByReference();
        NativeLib.check(NativeLib.get().hvd_size(owner.handle(), handle(), r));
        return r.getValue();
    }

    public boolean included() {
        IntByReference r = new IntByReference();
        NativeLib.check(NativeLib.get().hvd_process_set_included(owner.handle(), handle(), r));
        return r.getValue() != 0;
    }

    /** Destroys the set (collective over all ranks). Idempotent. */
    @Override
    public void close() {
        if (handle == null) {
            return;
        }
        Pointer h = handle;
        handle = null;
        NativeLib.check(NativeLib.get().hvd_process_set_destroy(owner.handle(), h));
    }
}
