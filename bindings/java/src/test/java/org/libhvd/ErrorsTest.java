// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** Errors on every rank: refused calls, disagreeing ranks, a timed-out op (last: it aborts). */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ErrorsTest extends Job {
    @Test
    @Order(1)
    void refusedOnThisRank() {
        Tensor a = Tensor.copyOf(new float[3]);
        Tensor b = Tensor.copyOf(new float[4]);
        HvdException e = assertStatus(HvdException.class, Status.ERR_INVALID_ARG,
                () -> hvd.allreduceAsync(a, b, OpOptions.named("shapes")));
        assertTrue(e.getMessage().startsWith("HVD_ERR_INVALID_ARG: "), e.getMessage());
        assertStatus(HvdException.class, Status.ERR_INVALID_ARG,
                () -> hvd.broadcastAsync(a, a, OpOptions.named("root").root(size)));
        assertStatus(HvdException.class, Status.ERR_INVALID_ARG,
                () -> hvd.alltoallAsync(a, OpOptions.named("splits").splits(new int[size + 1])));
        // A name in flight is refused. "twice" stays in flight on the other ranks until the
        // last rank enqueues it, which it does only after the barrier that follows their check.
        if (rank < size - 1) {
            try (Request first = hvd.allreduceAsync(a, a, OpOptions.named("twice"))) {
                assertStatus(HvdException.class, Status.ERR_INVALID_ARG,
                        () -> hvd.allreduceAsync(b, b, OpOptions.named("twice")));
                hvd.barrier();
                first.await();
            }
        } else {
            hvd.barrier();
            try (Request first = hvd.allreduceAsync(a, a, OpOptions.named("twice"))) {
                first.await();
            }
        }
        assertThrows(IllegalArgumentException.class, () -> Tensor.of(ByteBuffer.allocate(8), DType.INT32, 2));
        assertThrows(IllegalArgumentException.class, () -> Tensor.of(ByteBuffer.allocateDirect(4), DType.INT32, 2));
        hvd.checkHealthy();
    }

    @Test
    @Order(2)
    void ranksThatDisagree() {
        Tensor x = Tensor.copyOf(new float[rank + 1]);
        MismatchException e = assertStatus(MismatchException.class, Status.ERR_MISMATCH,
                () -> hvd.allreduce(x, OpOptions.named("ragged.allreduce")));
        assertTrue(e.detail().contains("ragged.allreduce") && e.detail().contains("rank"), e.detail());
        assertStatus(MismatchException.class, Status.ERR_MISMATCH,
                () -> hvd.allreduce(Tensor.copyOf(new float[1]), OpOptions.named("ops").op(rank == 0 ? ReduceOp.SUM : ReduceOp.MAX)));
        hvd.checkHealthy();
    }

    @Test
    @Order(3)
    void timedOutOpAbortsTheContext() {
        Tensor x = Tensor.copyOf(new float[1]);
        long t0 = System.nanoTime();
        if (rank == 0) {
            assertStatus(TimedOutException.class, Status.ERR_TIMED_OUT,
                    () -> hvd.allreduce(x, OpOptions.named("only.rank0").timeoutMs(300)));
        } else {
            HvdException e = assertThrows(HvdException.class,
                    () -> hvd.allreduce(x, OpOptions.named("others").timeoutMs(5000)));
            assertTrue(e instanceof TimedOutException || e instanceof PeerFailedException, e.toString());
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20), "the failure took too long");
        assertThrows(HvdException.class, hvd::checkHealthy);
        assertThrows(HvdException.class, () -> hvd.barrierAsync(null));
    }
}
