// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Allgather, broadcast, alltoall, reducescatter, their grouped forms, barrier and join. */
class CollectivesTest extends Job {
    private static final int COLS = 2;

    /** Rank r's rows of a ragged gather: r + 1 rows of COLS values. */
    private static double[] rows(DType t, int r) {
        double[] v = new double[(r + 1) * COLS];
        for (int i = 0; i < v.length; i++) {
            v[i] = Values.value(t, r, i);
        }
        return v;
    }

    private static double[] gathered(DType t) {
        int total = 0;
        for (int r = 0; r < size; r++) {
            total += (r + 1) * COLS;
        }
        double[] all = new double[total];
        int at = 0;
        for (int r = 0; r < size; r++) {
            double[] v = rows(t, r);
            System.arraycopy(v, 0, all, at, v.length);
            at += v.length;
        }
        return all;
    }

    private static int totalRows() {
        return size * (size + 1) / 2;
    }

    @Test
    void allgatherEveryDtypeRagged() {
        for (DType t : Values.ALL) {
            Tensor in = Values.tensor(t, rows(t, rank), rank + 1, COLS);
            Tensor out = hvd.allgather(in, OpOptions.named("ag." + t));
            assertEquals(t, out.dtype());
            assertArrayEquals(new long[] {totalRows(), COLS}, out.shape());
            assertArrayEquals(gathered(t), Values.read(out), 0, t.toString());
        }
    }

    @Test
    void allgatherIntoCallerOutput() {
        Tensor in = Values.tensor(DType.INT64, rows(DType.INT64, rank), rank + 1, COLS);
        Tensor out = Tensor.allocate(DType.INT64, totalRows(), COLS);
        try (Request r = hvd.allgatherIntoAsync(in, out, OpOptions.named("ag.into"))) {
            assertEquals(out, r.await().output());
        }
        assertArrayEquals(gathered(DType.INT64), Values.read(out), 0);
        long[] want = new long[2 * size];
        for (int r = 0; r < size; r++) {
            want[2 * r] = r;
            want[2 * r + 1] = -r;
        }
        assertArrayEquals(want, hvd.allgather(new long[] {rank, -rank}));
    }

    @Test
    void broadcastEveryDtypeFromEveryRoot() {
        for (DType t : Values.ALL) {
            for (int root = 0; root < size; root++) {
                Tensor in = Values.tensor(t, rows(t, rank), rank + 1, COLS);
                Tensor out = Tensor.allocate(t, root + 1, COLS);
                Tensor src = rank == root ? in : out;
                hvd.broadcastAsync(src, out, OpOptions.named("bc." + t + "." + root).root(root)).await().close();
                assertArrayEquals(rows(t, root), Values.read(out), 0, t + " from " + root);
            }
        }
        assertArrayEquals(new int[] {7, 8}, hvd.broadcast(rank == 1 ? new int[] {7, 8} : new int[2], 1));
    }

    @Test
    void alltoallWithSplits() {
        for (DType t : Values.ALL) {
            // rank r sends j + 1 rows to rank j; row k of rank r holds values of (r, k)
            int rowsOut = size * (size + 1) / 2;
            int[] splits = new int[size];
            for (int j = 0; j < size; j++) {
                splits[j] = j + 1;
            }
            double[] v = new double[rowsOut];
            for (int k = 0; k < rowsOut; k++) {
                v[k] = Values.value(t, rank, k);
            }
            try (Request r = hvd.alltoallAsync(Values.tensor(t, v), OpOptions.named("a2a." + t).splits(splits))) {
                r.await();
                int[] received = r.receivedSplits();
                double[] got = Values.read(r.output());
                int at = 0;
                for (int src = 0; src < size; src++) {
                    assertEquals(rank + 1, received[src]);
                    int first = rank * (rank + 1) / 2;  // rows before this rank's share at src
                    for (int k = 0; k < rank + 1; k++) {
                        assertEquals(Values.value(t, src, first + k), got[at++], 0, t + " from " + src);
                    }
                }
                assertEquals(got.length, at);
            }
        }
        // an even split of two rows per rank
        Tensor even = Tensor.copyOf(new int[2 * size]);
        java.nio.IntBuffer b = even.asByteBuffer().asIntBuffer();
        for (int i = 0; i < 2 * size; i++) {
            b.put(i, rank * 100 + i);
        }
        int[] got = hvd.alltoall(even, OpOptions.named("a2a.even")).toIntArray();
        for (int src = 0; src < size; src++) {
            assertEquals(src * 100 + 2 * rank, got[2 * src]);
            assertEquals(src * 100 + 2 * rank + 1, got[2 * src + 1]);
        }
    }

    @Test
    void reducescatterSumAndAverage() {
        int d0 = 2 * size + 1;  // uneven: the first rank gets one row more
        for (DType t : new DType[] {DType.FLOAT32, DType.FLOAT64, DType.INT32, DType.INT64, DType.FLOAT16, DType.BFLOAT16}) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVERAGE}) {
                double[] v = ranksValues(t, rank, d0 * COLS);
                Tensor out = hvd.reducescatter(Values.tensor(t, v, d0, COLS), OpOptions.named("rs." + t + op).op(op));
                int myRows = d0 / size + (rank < d0 % size ? 1 : 0);
                int firstRow = rank * (d0 / size) + Math.min(rank, d0 % size);
                assertArrayEquals(new long[] {myRows, COLS}, out.shape());
                double[] got = Values.read(out);
                for (int i = 0; i < got.length; i++) {
                    double sum = 0;
                    for (int r = 0; r < size; r++) {
                        sum += Values.value(t, r, firstRow * COLS + i);
                    }
                    double want = op == ReduceOp.SUM ? sum : Values.isFloat(t) ? sum / size : (long) (sum / size);
                    assertEquals(want, got[i], 0.02, t + " " + op + " element " + i);
                }
            }
        }
        assertStatus(HvdException.class, Status.ERR_UNSUPPORTED,
                () -> hvd.reducescatterAsync(Tensor.copyOf(new float[size]), OpOptions.named("rs.max").op(ReduceOp.MAX)));
    }

    @Test
    void groupedOps() {
        Tensor[] xs = {Tensor.copyOf(new float[] {rank, 1}), Tensor.copyOf(new long[] {rank, rank, rank}, 3, 1)};
        hvd.groupedAllreduce(xs, OpOptions.named("g.ar").op(ReduceOp.SUM));
        long sumRanks = (long) size * (size - 1) / 2;
        assertArrayEquals(new float[] {sumRanks, size}, xs[0].toFloatArray());
        assertArrayEquals(new long[] {sumRanks, sumRanks, sumRanks}, xs[1].toLongArray());

        Tensor[] gathered = hvd.groupedAllgather(new Tensor[] {Tensor.copyOf(new int[] {rank}), Tensor.copyOf(new double[] {rank, rank})},
                OpOptions.named("g.ag"));
        assertEquals(size, gathered[0].numElements());
        assertEquals(2 * size, gathered[1].numElements());
        for (int r = 0; r < size; r++) {
            assertEquals(r, gathered[0].toIntArray()[r]);
            assertEquals(r, gathered[1].toDoubleArray()[2 * r + 1], 0);
        }

        float[] ones = new float[size];
        java.util.Arrays.fill(ones, 1);
        Tensor[] scattered = hvd.groupedReducescatter(new Tensor[] {Tensor.copyOf(ones), Tensor.copyOf(ones)}, OpOptions.named("g.rs"));
        for (Tensor s : scattered) {
            assertArrayEquals(new float[] {size}, s.toFloatArray());
        }
    }

    @Test
    void barrierAndJoin() {
        hvd.barrier();
        try (Request b = hvd.barrierAsync(OpOptions.named("named.barrier"))) {
            assertTrue(b.await(30, java.util.concurrent.TimeUnit.SECONDS));
        }
        int last = hvd.join();
        assertTrue(last >= 0 && last < size, "last joined rank " + last);
    }
}
