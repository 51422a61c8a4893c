// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Topology, version, statuses, configuration, timeline and hvd_mem_alloc memory. */
class BasicsTest extends Job {
    @Test
    void topologyFromTheLauncher() {
        assertEquals(Integer.parseInt(System.getenv("HVD_RANK")), rank);
        assertEquals(Integer.parseInt(System.getenv("HVD_SIZE")), size);
        assertEquals(rank, hvd.localRank());
        assertEquals(size, hvd.localSize());
        assertEquals(0, hvd.crossRank());
        assertEquals(1, hvd.crossSize());
        hvd.checkHealthy();
    }

    @Test
    void versionAndFeatures() {
        String v = Hvd.versionString();
        String[] p = v.split("\\.");
        assertEquals(3, p.length, v);
        assertEquals(Integer.parseInt(p[0]) * 10000 + Integer.parseInt(p[1]) * 100 + Integer.parseInt(p[2]), Hvd.version());
        long known = Features.FEATURE_UCX | Features.FEATURE_CUDA | Features.FEATURE_NCCL | Features.FEATURE_HWLOC;
        assertEquals(0, Hvd.features() & ~known, "unknown feature bits");
        assertEquals(0, Hvd.features() & Features.FEATURE_CUDA, "CUDA is reserved");
    }

    @Test
    void statusNames() {
        assertEquals("HVD_ERR_MISMATCH", Status.name(Status.ERR_MISMATCH));
        assertEquals("HVD_ERR_PEER_FAILED", Status.name(Status.ERR_PEER_FAILED));
        assertEquals("HVD_OK", Status.name(Status.OK));
        assertFalse(Status.describe(Status.ERR_TIMED_OUT).isEmpty());
        assertTrue(HvdException.of(Status.ERR_PEER_FAILED, "x") instanceof PeerFailedException);
        assertTrue(HvdException.of(Status.ERR_MISMATCH, "x") instanceof MismatchException);
        assertTrue(HvdException.of(Status.ERR_TIMED_OUT, "x") instanceof TimedOutException);
        assertEquals(HvdException.class, HvdException.of(Status.ERR_BUSY, "x").getClass());
    }

    @Test
    void configOfTheContextAndTheDefault() {
        double before = hvd.config(ConfigKey.FUSION_THRESHOLD);
        hvd.setConfig(ConfigKey.FUSION_THRESHOLD, 1 << 20);
        assertEquals(1 << 20, hvd.config(ConfigKey.FUSION_THRESHOLD), 0);
        hvd.setConfig(ConfigKey.FUSION_THRESHOLD, before);
        for (ConfigKey k : ConfigKey.values()) {
            assertTrue(hvd.config(k) >= 0, k.toString());
        }
        double cycle = Hvd.defaultConfig(ConfigKey.CYCLE_TIME);
        Hvd.setDefaultConfig(ConfigKey.CYCLE_TIME, cycle);
        assertEquals(cycle, Hvd.defaultConfig(ConfigKey.CYCLE_TIME), 0);
        assertStatus(HvdException.class, Status.ERR_INVALID_ARG, () -> hvd.setConfig(ConfigKey.CYCLE_TIME, -1));
    }

    @Test
    void timelineRecordsAValidTrace() throws Exception {
        Path dir = Files.createTempDirectory("hvd-java-timeline");
        Path file = dir.resolve("timeline." + rank + ".json");
        hvd.timelineStart(file.toString(), true);
        assertStatus(HvdException.class, Status.ERR_BUSY, () -> hvd.timelineStart(file.toString(), false));
        hvd.allreduce(Tensor.copyOf(new float[] {1}), OpOptions.named("traced.tensor"));
        hvd.timelineStop();
        String trace = Files.readString(file);
        assertTrue(trace.startsWith("[") && trace.contains("traced.tensor"), trace);
        Files.delete(file);
        Files.delete(dir);
    }

    @Test
    void sharedMemoryTensors() {
        final int n = 64 * 1024;
        try (SharedMemory a = SharedMemory.allocate(4L * n); SharedMemory b = SharedMemory.allocate(4L * n)) {
            ByteBuffer raw = a.buffer();
            assertEquals(4L * n, raw.capacity());
            assertTrue(raw.isDirect());
            FloatBuffer in = raw.asFloatBuffer();
            for (int i = 0; i < n; i++) {
                in.put(i, rank + i % 10);
            }
            Tensor out = Tensor.of(b.buffer().asFloatBuffer());
            hvd.allreduceAsync(Tensor.of(in), out, OpOptions.named("shm.mem").op(ReduceOp.SUM)).await().close();
            FloatBuffer got = b.buffer().asFloatBuffer();
            int sumRanks = size * (size - 1) / 2;
            for (int i = 0; i < n; i += 997) {
                assertEquals(sumRanks + size * (i % 10), got.get(i), 0, "element " + i);
            }
        }
        assertStatus(HvdException.class, Status.ERR_INVALID_ARG, () -> SharedMemory.allocate(0));
    }

    @Test
    void uniqueIdsAreFresh() {
        if (rank == 0) {
            byte[] a = Hvd.uniqueId();
            assertEquals(128, a.length);
            assertFalse(java.util.Arrays.equals(a, Hvd.uniqueId()));
        }
        assertThrows(IllegalArgumentException.class, () -> InitOptions.create().uniqueId(new byte[3]));
    }
}
