// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Request handles: polling, bounded waits, results and release. */
class RequestTest extends Job {
    @Test
    void pendingUntilEveryRankEnqueued() {
        Tensor x = Tensor.copyOf(new float[] {rank});
        Request late = null;
        if (rank == 0) {
            late = hvd.allreduceAsync(x, x, OpOptions.named("late"));
            assertFalse(late.test(), "no other rank has enqueued 'late' yet");
            long t0 = System.nanoTime();
            assertFalse(late.await(50, TimeUnit.MILLISECONDS));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10));
        }
        hvd.barrier();
        if (rank != 0) {
            late = hvd.allreduceAsync(x, x, OpOptions.named("late"));
        }
        try (Request r = late) {
            while (!r.test()) {
                Thread.onSpinWait();
            }
            assertTrue(r.await(1, TimeUnit.SECONDS));
            assertEquals("", r.message());
        }
        assertArrayEquals(new float[] {size * (size - 1) / 2f}, x.toFloatArray());
    }

    @Test
    void closeIsIdempotentAndEndsUse() {
        Request r = hvd.barrierAsync(OpOptions.named("closing"));
        r.close();
        r.close();
        assertThrows(IllegalStateException.class, r::test);
        assertThrows(IllegalStateException.class, r::message);
    }

    @Test
    void resultGettersOfTheWrongKind() {
        try (Request r = hvd.allgatherAsync(Tensor.copyOf(new int[] {1}), OpOptions.named("kinds"))) {
            r.await();
            assertStatus(HvdException.class, Status.ERR_INVALID_ARG, r::value);
            assertStatus(HvdException.class, Status.ERR_INVALID_ARG, () -> r.output(1));
            assertEquals(size, r.output(0).numElements());
        }
    }
}
