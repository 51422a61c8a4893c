// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import java.nio.ByteBuffer;

/** Test values of every dtype as doubles, written to and read from tensors. */
final class Values {
    private Values() {}

    static final DType[] ALL = DType.values();

    static boolean isFloat(DType t) {
        return t == DType.FLOAT16 || t == DType.FLOAT32 || t == DType.FLOAT64 || t == DType.BFLOAT16;
    }

    /** A small integer of rank r, element i (1..4; 0 or 1 for bool), exact in every dtype. */
    static double value(DType t, int r, int i) {
        if (t == DType.BOOL) {
            return (r + i) % 3 == 0 ? 1 : 0;
        }
        return (r * 3 + i * 5) % 4 + 1;
    }

    static Tensor tensor(DType t, double[] v, long... shape) {
        Tensor x = Tensor.allocate(t, shape.length == 0 ? new long[] {v.length} : shape);
        ByteBuffer b = x.asByteBuffer();
        for (double d : v) {
            put(b, t, d);
        }
        return x;
    }

    static double[] read(Tensor x) {
        ByteBuffer b = x.asByteBuffer();
        double[] out = new double[Math.toIntExact(x.numElements())];
        for (int i = 0; i < out.length; i++) {
            out[i] = get(b, x.dtype());
        }
        return out;
    }

    static void put(ByteBuffer b, DType t, double d) {
        switch (t) {
            case UINT8:
            case INT8:
            case BOOL:
                b.put((byte) d);
                break;
            case UINT16:
            case INT16:
                b.putShort((short) d);
                break;
            case INT32:
                b.putInt((int) d);
                break;
            case INT64:
                b.putLong((long) d);
                break;
            case FLOAT16:
                b.putShort(toHalf((float) d));
                break;
            case BFLOAT16:
                b.putShort((short) (Float.floatToIntBits((float) d) >>> 16));
                break;
            case FLOAT32:
                b.putFloat((float) d);
                break;
            case FLOAT64:
                b.putDouble(d);
                break;
            default:
                throw new AssertionError(t);
        }
    }

    static double get(ByteBuffer b, DType t) {
        switch (t) {
            case UINT8:
            case BOOL:
                return b.get() & 0xff;
            case INT8:
                return b.get();
            case UINT16:
                return b.getShort() & 0xffff;
            case INT16:
                return b.getShort();
            case INT32:
                return b.getInt();
            case INT64:
                return b.getLong();
            case FLOAT16:
                return fromHalf(b.getShort());
            case BFLOAT16:
                return Float.intBitsToFloat((b.getShort() & 0xffff) << 16);
            case FLOAT32:
                return b.getFloat();
            case FLOAT64:
                return b.getDouble();
            default:
                throw new AssertionError(t);
        }
    }

    /** IEEE half of a float that is exact in half (normal numbers and zero). */
    static short toHalf(float f) {
        int bits = Float.floatToIntBits(f);
        int sign = (bits >>> 16) & 0x8000;
        int exp = ((bits >>> 23) & 0xff) - 127 + 15;
        int mant = (bits >>> 13) & 0x3ff;
        if (f == 0) {
            return (short) sign;
        }
        return (short) (sign | (exp << 10) | mant);
    }

    static float fromHalf(short h) {
        int sign = (h & 0x8000) << 16;
        int exp = (h >>> 10) & 0x1f;
        int mant = h & 0x3ff;
        if (exp == 0 && mant == 0) {
            return Float.intBitsToFloat(sign);
        }
        return Float.intBitsToFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
    }
}
