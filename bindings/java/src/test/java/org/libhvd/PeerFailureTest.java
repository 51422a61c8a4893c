// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The last rank is killed (SIGKILL) while a large allreduce is in flight: every other rank's
 * request fails with PeerFailedException within 10 s and prints "survivor ok". Run alone
 * (tag peer-failure): hvdrun then exits with the killed rank's code, 137.
 */
@Tag("peer-failure")
class PeerFailureTest extends Job {
    @Test
    void killedMidCollective() throws Exception {
        int victim = size - 1;
        Tensor big = Tensor.allocate(DType.FLOAT32, 8 << 20);
        hvd.allreduce(Tensor.copyOf(new float[1]), OpOptions.named("warm"));
        if (rank == victim) {
            Thread.sleep(300);
        }
        long t0 = System.nanoTime();
        Request r = hvd.allreduceAsync(big, big, OpOptions.named("big"));
        if (rank == victim) {
            Thread.sleep(3);
            new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            Thread.sleep(60_000);
        }
        Request next = r;
        try {
            r.await();
            // a fast machine may finish before the victim dies: then the next op must fail
            next = hvd.allreduceAsync(big, big, OpOptions.named("big.after"));
            Request after = next;
            assertThrows(PeerFailedException.class, after::await);
        } catch (PeerFailedException expected) {
            assertTrue(expected.detail().length() > 0);
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 10_000, "the failure took " + ms + " ms to be noticed");
        assertThrows(PeerFailedException.class, hvd::checkHealthy);
        System.out.println("survivor ok: rank " + rank + " saw PeerFailedException after " + ms + " ms");
    }
}
