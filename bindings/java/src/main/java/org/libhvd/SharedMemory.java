// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Memory from {@code hvd_mem_alloc}: page aligned, zero-filled, and mapped by the other ranks
 * of a single-host job, so allreduces whose tensors lie in it on every rank need no staging
 * copies. Needs no context. Wrap {@link #buffer()} in a {@link Tensor}; free with
 * {@link #close()} once no collective on it is in flight.
 */
public final class SharedMemory implements AutoCloseable {
    private Pointer ptr;
    private final long bytes;

    private SharedMemory(Pointer ptr, long bytes) {
        this.ptr = ptr;
        this.bytes = bytes;
    }

    /** At least {@code bytes} bytes of shared tensor memory. */
    public static SharedMemory allocate(long bytes) {
        PointerByReference p = new PointerByReference();
        NativeLib.check(NativeLib.get().hvd_mem_alloc(bytes, p));
        return new SharedMemory(p.getValue(), bytes);
    }

    public long size() {
        return bytes;
    }

    /** A direct buffer over the memory, in native byte order (valid until close). */
    public ByteBuffer buffer() {
        if (ptr == null) {
            throw new IllegalStateException("the memory was freed");
        }
        return ptr.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder());
    }

    /** Frees the memory (hvd_mem_free). Idempotent. */
    @Override
    public void close() {
        if (ptr == null) {
            return;
        }
        Pointer p = ptr;
        ptr = null;
        NativeLib.check(NativeLib.get().hvd_mem_free(p));
    }
}
