// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** Knobs that may change while a context runs ({@code hvd_config_key_t}); units as in hvd.h. */
public enum ConfigKey {
    /** Bytes of allreduces fused into one collective; 0 disables fusion. */
    FUSION_THRESHOLD(0),
    /** Milliseconds the engine may hold newly enqueued ops to report them together. */
    CYCLE_TIME(1),
    /** Seconds before the stall inspector warns; 0 turns it off. */
    STALL_CHECK_TIME(2),
    /** Seconds before stalled ops fail and the job aborts; 0 never. */
    STALL_SHUTDOWN_TIME(3),
    /** 1: rank 0 tunes fusion threshold and cycle time online. */
    AUTOTUNE(4),
    /** Entries of the response cache per process set; 0 turns it off. */
    CACHE_CAPACITY(5);

    private final int code;

    ConfigKey(int code) {
        this.code = code;
    }

    /** The C ABI's value. */
    public int code() {
        return code;
    }
}
