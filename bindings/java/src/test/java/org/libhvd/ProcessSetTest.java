// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Collectives inside a process set of the first two ranks; ranks outside it see rank -1. */
class ProcessSetTest extends Job {
    @Test
    void firstTwoRanks() {
        try (ProcessSet ps = hvd.createProcessSet(1, 0)) {
            boolean member = rank < 2;
            assertEquals(member, ps.included());
            assertEquals(2, ps.size());
            assertEquals(member ? rank : -1, ps.rank());
            if (member) {
                Tensor x = Tensor.copyOf(new int[] {rank + 1, 10});
                hvd.allreduce(x, OpOptions.named("ps.sum").processSet(ps).op(ReduceOp.SUM));
                assertArrayEquals(new int[] {3, 20}, x.toIntArray());
                Tensor b = Tensor.copyOf(new double[] {rank});
                hvd.broadcastAsync(b, b, OpOptions.named("ps.bc").processSet(ps).root(1)).await().close();
                assertArrayEquals(new double[] {1}, b.toDoubleArray());
                try (Request r = hvd.alltoallAsync(Tensor.copyOf(new long[] {rank, rank}),
                        OpOptions.named("ps.a2a").processSet(ps).splits(1, 1))) {
                    assertArrayEquals(new long[] {0, 1}, r.await().output().toLongArray());
                    assertArrayEquals(new int[] {1, 1}, r.receivedSplits());
                }
            }
            hvd.barrier();
        }
        ProcessSet destroyed = hvd.createProcessSet(0);
        destroyed.close();
        assertThrows(IllegalStateException.class, destroyed::rank);
        assertStatus(HvdException.class, Status.ERR_INVALID_ARG, () -> hvd.createProcessSet(0, 0));
    }
}
