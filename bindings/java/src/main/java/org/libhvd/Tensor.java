// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;

/**
 * A dense, row-major tensor over a direct {@code java.nio} buffer: its data starts at the
 * buffer's position. The library reads and writes the memory in place, so the buffer must
 * stay untouched while a collective on it runs. Heap arrays go through {@code copyOf}.
 */
public final class Tensor {
    private final Buffer buffer;
    private final DType dtype;
    private final long[] shape;
    private final long elements;

    private Tensor(Buffer buffer, DType dtype, long[] shape) {
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException(
                    "libhvd needs a direct buffer (ByteBuffer.allocateDirect); copy heap arrays with Tensor.copyOf");
        }
        if (shape.length > Layout.MAX_NDIM) {
            throw new IllegalArgumentException("a tensor has at most " + Layout.MAX_NDIM + " dimensions, got " + shape.length);
        }
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative dimension in shape " + Arrays.toString(shape));
            }
            n = Math.multiplyExact(n, d);
        }
        long bytesPerUnit = buffer instanceof ByteBuffer ? 1 : dtype.elementSize();
        long available = buffer.remaining() * bytesPerUnit;
        if (available < Math.multiplyExact(n, (long) dtype.elementSize())) {
            throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " of " + dtype + " needs "
                    + n * dtype.elementSize() + " bytes, the buffer has " + available);
        }
        this.buffer = buffer;
        this.dtype = dtype;
        this.shape = shape.clone();
        this.elements = n;
    }

    private static long[] shapeOr(long[] shape, Buffer b) {
        return shape.length == 0 ? new long[] {b.remaining()} : shape;
    }

    /** A tensor over a direct ByteBuffer holding elements of any dtype (native byte order). */
    public static Tensor of(ByteBuffer data, DType dtype, long... shape) {
        return new Tensor(data, dtype, shape);
    }

    /** float32 over a direct FloatBuffer; no shape means one dimension of its remaining size. */
    public static Tensor of(FloatBuffer data, long... shape) {
        return new Tensor(data, DType.FLOAT32, shapeOr(shape, data));
    }

    public static Tensor of(DoubleBuffer data, long... shape) {
        return new Tensor(data, DType.FLOAT64, shapeOr(shape, data));
    }

    public static Tensor of(IntBuffer data, long... shape) {
        return new Tensor(data, DType.INT32, shapeOr(shape, data));
    }

    public static Tensor of(LongBuffer data, long... shape) {
        return new Tensor(data, DType.INT64, shapeOr(shape, data));
    }

    /** int16, uint16, float16 or bfloat16 over a direct ShortBuffer. */
    public static Tensor of(ShortBuffer data, DType dtype, long... shape) {
        if (dtype.elementSize() != 2) {
            throw new IllegalArgumentException("a ShortBuffer holds 2-byte elements, not " + dtype);
        }
        return new Tensor(data, dtype, shapeOr(shape, data));
    }

    /** A zero-filled tensor in a new direct buffer. */
    public static Tensor allocate(DType dtype, long... shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        ByteBuffer b = ByteBuffer.allocateDirect(Math.toIntExact(n * dtype.elementSize())).order(ByteOrder.nativeOrder());
        return new Tensor(b, dtype, shape);
    }

    private static long[] flat(int length, long[] shape) {
        return shape.length == 0 ? new long[] {length} : shape;
    }

    /** A copy of a heap array in a new direct buffer (one dimension unless a shape is given). */
    public static Tensor copyOf(float[] a, long... shape) {
        Tensor t = allocate(DType.FLOAT32, flat(a.length, shape));
        t.asByteBuffer().asFloatBuffer().put(a);
        return t;
    }

    public static Tensor copyOf(double[] a, long... shape) {
        Tensor t = allocate(DType.FLOAT64, flat(a.length, shape));
        t.asByteBuffer().asDoubleBuffer().put(a);
        return t;
    }

    public static Tensor copyOf(int[] a, long... shape) {
        Tensor t = allocate(DType.INT32, flat(a.length, shape));
        t.asByteBuffer().asIntBuffer().put(a);
        return t;
    }

    public static Tensor copyOf(long[] a, long... shape) {
        Tensor t = allocate(DType.INT64, flat(a.length, shape));
        t.asByteBuffer().asLongBuffer().put(a);
        return t;
    }

    /** int16, uint16, float16 or bfloat16 elements from a short[]. */
    public static Tensor copyOf(short[] a, DType dtype, long... shape) {
        Tensor t = allocate(dtype, flat(a.length, shape));
        t.asByteBuffer().asShortBuffer().put(a);
        return t;
    }

    /** int8, uint8 or bool elements from a byte[]. */
    public static Tensor copyOf(byte[] a, DType dtype, long... shape) {
        Tensor t = allocate(dtype, flat(a.length, shape));
        t.asByteBuffer().put(a);
        return t;
    }

    public DType dtype() {
        return dtype;
    }

    /** A copy of the shape. */
    public long[] shape() {
        return shape.clone();
    }

    public long numElements() {
        return elements;
    }

    public long byteSize() {
        return elements * dtype.elementSize();
    }

    /** The tensor's bytes, from its first element, in native byte order. */
    public ByteBuffer asByteBuffer() {
        ByteBuffer b;
        if (buffer instanceof ByteBuffer) {
            b = ((ByteBuffer) buffer).duplicate();
        } else {
            Pointer p = address();
            b = p == null ? ByteBuffer.allocateDirect(0) : p.getByteBuffer(0, byteSize());
        }
        b.limit(b.position() + Math.toIntExact(byteSize()));
        return b.slice().order(ByteOrder.nativeOrder());
    }

    public float[] toFloatArray() {
        float[] a = new float[Math.toIntExact(elements)];
        asByteBuffer().asFloatBuffer().get(a);
        return a;
    }

    public double[] toDoubleArray() {
        double[] a = new double[Math.toIntExact(elements)];
        asByteBuffer().asDoubleBuffer().get(a);
        return a;
    }

    public int[] toIntArray() {
        int[] a = new int[Math.toIntExact(elements)];
        asByteBuffer().asIntBuffer().get(a);
        return a;
    }

    public long[] toLongArray() {
        long[] a = new long[Math.toIntExact(elements)];
        asByteBuffer().asLongBuffer().get(a);
        return a;
    }

    public short[] toShortArray() {
        short[] a = new short[Math.toIntExact(elements)];
        asByteBuffer().asShortBuffer().get(a);
        return a;
    }

    public byte[] toByteArray() {
        byte[] a = new byte[Math.toIntExact(elements)];
        asByteBuffer().get(a);
        return a;
    }

    /** The address of the first element (keeps no reference: hold the Tensor while in use). */
    Pointer address() {
        int unit = buffer instanceof ByteBuffer ? 1 : dtype.elementSize();
        Pointer base = Native.getDirectBufferPointer(buffer);
        return base == null ? null : base.share((long) buffer.position() * unit);
    }

    /** A library-owned output described by an hvd_tensor_t, copied into a new direct buffer. */
    static Tensor copyOfNative(Pointer desc) {
        DType dtype = DType.of(desc.getInt(Layout.TENSOR_DTYPE));
        int ndim = desc.getInt(Layout.TENSOR_NDIM);
        Pointer shapeP = desc.getPointer(Layout.TENSOR_SHAPE);
        long[] shape = ndim == 0 ? new long[0] : shapeP.getLongArray(0, ndim);
        Tensor t = allocate(dtype, shape);
        Pointer data = desc.getPointer(Layout.TENSOR_DATA);
        if (t.byteSize() > 0) {
            t.asByteBuffer().put(data.getByteBuffer(0, t.byteSize()));
        }
        return t;
    }

    @Override
    public String toString() {
        return "Tensor(" + dtype + ", " + Arrays.toString(shape) + ")";
    }
}
