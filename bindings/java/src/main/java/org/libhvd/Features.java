// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** Bits of {@link Hvd#features()} ({@code HVD_FEATURE_*}). */
public final class Features {
    /** Collectives between processes run over UCX. */
    public static final long FEATURE_UCX = 1L << 0;
    /** Reserved until libhvd has a GPU layer: never set. */
    public static final long FEATURE_CUDA = 1L << 1;
    /** Reserved until libhvd has a GPU layer: never set. */
    public static final long FEATURE_NCCL = 1L << 2;
    /** Reserved until rank placement reads the host topology through hwloc: never set. */
    public static final long FEATURE_HWLOC = 1L << 3;

    private Features() {}
}
