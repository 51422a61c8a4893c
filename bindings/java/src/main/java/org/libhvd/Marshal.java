// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The native memory of one call: hvd_tensor_t and hvd_op_params_t structs, shapes, names and
 * splits. The library copies all of it during the call; the object is kept reachable until
 * the call returns.
 */
final class Marshal {
    private final List<Memory> blocks = new ArrayList<>();

    private Memory block(long bytes) {
        Memory m = new Memory(Math.max(bytes, 8));
        m.clear();
        blocks.add(m);
        return m;
    }

    /** An hvd_tensor_t describing t (CPU memory); null for a null tensor. */
    Pointer tensor(Tensor t) {
        if (t == null) {
            return null;
        }
        Memory m = block(Layout.SIZEOF_TENSOR);
        long[] shape = t.shape();
        Memory s = block((long) shape.length * 8);
        if (shape.length > 0) {
            s.write(0, shape, 0, shape.length);
        }
        m.setPointer(Layout.TENSOR_DATA, t.address());
        m.setInt(Layout.TENSOR_DTYPE, t.dtype().code());
        m.setInt(Layout.TENSOR_NDIM, shape.length);
        m.setPointer(Layout.TENSOR_SHAPE, s);
        m.setInt(Layout.TENSOR_DEVICE_TYPE, Layout.DEVICE_CPU);
        return m;
    }

    /** A C array of pointers to hvd_tensor_t structs. */
    Pointer tensors(Tensor[] ts) {
        Memory arr = block((long) ts.length * Native.POINTER_SIZE);
        for (int i = 0; i < ts.length; i++) {
            if (ts[i] == null) {
                throw new IllegalArgumentException("tensor " + i + " of the group is null");
            }
            arr.setPointer((long) i * Native.POINTER_SIZE, tensor(ts[i]));
        }
        return arr;
    }

    /** A zeroed hvd_tensor_t for the library to fill. */
    Memory emptyTensor() {
        return block(Layout.SIZEOF_TENSOR);
    }

    /** An hvd_op_params_t; null when o is null (all defaults). */
    Pointer params(OpOptions o) {
        if (o == null) {
            return null;
        }
        Memory m = block(Layout.SIZEOF_OP_PARAMS);
        long mask = 0;
        if (o.name != null) {
            byte[] b = o.name.getBytes(StandardCharsets.UTF_8);
            Memory s = block(b.length + 1L);
            s.write(0, b, 0, b.length);
            s.setByte(b.length, (byte) 0);
            m.setPointer(Layout.OP_PARAMS_NAME, s);
            mask |= Layout.OP_FIELD_NAME;
        }
        if (o.processSet != null) {
            m.setPointer(Layout.OP_PARAMS_PROCESS_SET, o.processSet.handle());
            mask |= Layout.OP_FIELD_PROCESS_SET;
        }
        if (o.op != null) {
            m.setInt(Layout.OP_PARAMS_REDUCE_OP, o.op.code());
            mask |= Layout.OP_FIELD_REDUCE_OP;
        }
        if (o.prescale != null || o.postscale != null) {
            m.setDouble(Layout.OP_PARAMS_PRESCALE, o.prescale == null ? 1.0 : o.prescale);
            m.setDouble(Layout.OP_PARAMS_POSTSCALE, o.postscale == null ? 1.0 : o.postscale);
            mask |= Layout.OP_FIELD_SCALE;
        }
        if (o.root != null) {
            m.setInt(Layout.OP_PARAMS_ROOT_RANK, o.root);
            mask |= Layout.OP_FIELD_ROOT;
        }
        if (o.splits != null) {
            Memory s = block(4L * o.splits.length);
            if (o.splits.length > 0) {
                s.write(0, o.splits, 0, o.splits.length);
            }
            m.setPointer(Layout.OP_PARAMS_SPLITS, s);
            m.setInt(Layout.OP_PARAMS_NUM_SPLITS, o.splits.length);
            mask |= Layout.OP_FIELD_SPLITS;
        }
        if (o.timeoutMs != null) {
            m.setLong(Layout.OP_PARAMS_TIMEOUT_MS, o.timeoutMs);
            mask |= Layout.OP_FIELD_TIMEOUT;
        }
        m.setLong(Layout.OP_PARAMS_FIELD_MASK, mask);
        return m;
    }

    /** An hvd_init_params_t. */
    Pointer initParams(InitOptions o) {
        Memory m = block(Layout.SIZEOF_INIT_PARAMS);
        long mask = 0;
        if (o.rank != null) {
            m.setInt(Layout.INIT_PARAMS_RANK, o.rank);
            m.setInt(Layout.INIT_PARAMS_SIZE, o.size);
            mask |= Layout.INIT_FIELD_RANK;
        }
        if (o.uniqueId != null) {
            m.write(Layout.INIT_PARAMS_UNIQUE_ID, o.uniqueId, 0, Layout.UNIQUE_ID_BYTES);
            mask |= Layout.INIT_FIELD_UNIQUE_ID;
        }
        if (o.timeoutMs != null) {
            m.setLong(Layout.INIT_PARAMS_TIMEOUT_MS, o.timeoutMs);
            mask |= Layout.INIT_FIELD_TIMEOUT;
        }
        m.setLong(Layout.INIT_PARAMS_FIELD_MASK, mask);
        return m;
    }
}
