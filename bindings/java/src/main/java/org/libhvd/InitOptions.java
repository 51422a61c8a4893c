// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/**
 * How {@link Hvd#init(InitOptions)} joins a job ({@code hvd_init_params_t}). Without any
 * option everything comes from the launcher's environment (hvdrun, Open MPI, Slurm, PMI,
 * torchrun).
 */
public final class InitOptions {
    Integer rank;
    int size;
    byte[] uniqueId;
    Long timeoutMs;

    public static InitOptions create() {
        return new InitOptions();
    }

    /** This process's rank and the job's size, given here rather than by a launcher. */
    public InitOptions rank(int rank, int size) {
        this.rank = rank;
        this.size = size;
        return this;
    }

    /** Meet through the id one process made with {@link Hvd#uniqueId()}; needs {@link #rank}. */
    public InitOptions uniqueId(byte[] id) {
        if (id.length != Layout.UNIQUE_ID_BYTES) {
            throw new IllegalArgumentException("a unique id has " + Layout.UNIQUE_ID_BYTES + " bytes, got " + id.length);
        }
        this.uniqueId = id.clone();
        return this;
    }

    /** Bounds init and finalize, and is the default op timeout. */
    public InitOptions timeoutMs(long ms) {
        this.timeoutMs = ms;
        return this;
    }
}
