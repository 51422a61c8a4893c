// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;

/** Allreduce of every dtype and op, scaled, in place and not, against each rank's reference. */
class AllreduceTest extends Job {
    private static final int N = 7;

    private static double reference(DType t, ReduceOp op, int i) {
        double acc = Values.value(t, 0, i);
        for (int r = 1; r < size; r++) {
            double v = Values.value(t, r, i);
            switch (op) {
                case SUM:
                case AVERAGE:
                    acc += v;
                    break;
                case MIN:
                    acc = Math.min(acc, v);
                    break;
                case MAX:
                    acc = Math.max(acc, v);
                    break;
                case PRODUCT:
                    acc *= v;
                    break;
                default:
                    throw new AssertionError(op);
            }
        }
        if (t == DType.BOOL) {
            return acc != 0 ? 1 : 0;
        }
        if (op == ReduceOp.AVERAGE) {
            acc /= size;
            return Values.isFloat(t) ? acc : (long) acc;
        }
        return acc;
    }

    private static double tolerance(DType t) {
        return t == DType.FLOAT16 || t == DType.BFLOAT16 ? 0.02 : 1e-6;
    }

    @Test
    void everyDtypeAndOp() {
        for (DType t : Values.ALL) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.PRODUCT, ReduceOp.AVERAGE}) {
                Tensor in = Values.tensor(t, ranksValues(t, rank, N));
                Tensor out = Tensor.allocate(t, N);
                OpOptions o = OpOptions.named("ar." + t + "." + op).op(op);
                if (t == DType.BOOL && op == ReduceOp.AVERAGE) {
                    assertStatus(HvdException.class, Status.ERR_UNSUPPORTED, () -> hvd.allreduceAsync(in, out, o));
                    continue;
                }
                try (Request r = hvd.allreduceAsync(in, out, o)) {
                    assertEquals(out, r.await().output());
                    assertEquals("", r.message());
                }
                double[] got = Values.read(out);
                for (int i = 0; i < N; i++) {
                    assertEquals(reference(t, op, i), got[i], tolerance(t), t + " " + op + " element " + i);
                }
                assertArrayEquals(ranksValues(t, rank, N), Values.read(in), 0, "the input was left as it was");
            }
        }
    }

    @Test
    void inPlaceWithScaling() {
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.INT32, DType.FLOAT16}) {
            Tensor x = Values.tensor(t, ranksValues(t, rank, N), 1, N);
            hvd.allreduce(x, OpOptions.named("scaled." + t).op(ReduceOp.SUM).prescale(0.5).postscale(3));
            double[] got = Values.read(x);
            for (int i = 0; i < N; i++) {
                double sum = 0;
                for (int r = 0; r < size; r++) {
                    sum += Values.isFloat(t) ? 0.5 * Values.value(t, r, i) : (long) (0.5 * Values.value(t, r, i));
                }
                double want = Values.isFloat(t) ? 3 * sum : (long) (3 * sum);
                assertEquals(want, got[i], tolerance(t), t + " element " + i);
            }
        }
    }

    @Test
    void twoDimensionsAndBufferPositions() {
        ByteBuffer raw = ByteBuffer.allocateDirect(4 * 20).order(ByteOrder.nativeOrder());
        FloatBuffer f = raw.asFloatBuffer();
        for (int i = 0; i < 20; i++) {
            f.put(i, rank + i);
        }
        f.position(8);
        Tensor x = Tensor.of(f.slice(), 3, 4);
        assertArrayEquals(new long[] {3, 4}, x.shape());
        hvd.allreduce(x, OpOptions.named("positioned").op(ReduceOp.MAX));
        for (int i = 0; i < 20; i++) {
            float want = i >= 8 ? size - 1 + i : rank + i;
            assertEquals(want, f.get(i), 0, "element " + i);
        }
    }

    @Test
    void heapArrays() {
        assertArrayEquals(new float[] {size, 2f * size}, hvd.allreduce(new float[] {1, 2}, ReduceOp.SUM));
        assertArrayEquals(new double[] {1.5}, hvd.allreduce(new double[] {1.5}, ReduceOp.AVERAGE));
        assertArrayEquals(new int[] {size - 1, 0}, hvd.allreduce(new int[] {rank, -rank}, ReduceOp.MAX));
        assertArrayEquals(new long[] {0, -(size - 1)}, hvd.allreduce(new long[] {rank, -rank}, ReduceOp.MIN));
    }

    @Test
    void adasumOnPowersOfTwo() {
        float[] a = {rank + 1f, 2f - rank, 0.5f};
        Tensor x = Tensor.copyOf(a);
        OpOptions o = OpOptions.named("adasum").op(ReduceOp.ADASUM);
        if (Integer.bitCount(size) != 1) {
            assertStatus(HvdException.class, Status.ERR_UNSUPPORTED, () -> hvd.allreduceAsync(x, x, o));
            return;
        }
        hvd.allreduce(x, o);
        if (size == 2) {
            double[] u = {1, 2, 0.5};
            double[] v = {2, 1, 0.5};
            double dot = 0;
            double uu = 0;
            double vv = 0;
            for (int i = 0; i < 3; i++) {
                dot += u[i] * v[i];
                uu += u[i] * u[i];
                vv += v[i] * v[i];
            }
            float[] got = x.toFloatArray();
            for (int i = 0; i < 3; i++) {
                double want = (1 - dot / (2 * uu)) * u[i] + (1 - dot / (2 * vv)) * v[i];
                assertEquals(want, got[i], 1e-5, "element " + i);
            }
        }
    }
}
