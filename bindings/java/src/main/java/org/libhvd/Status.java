// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** The status codes of libhvd's C ABI ({@code hvd_status_t}): 0 success, 1 in progress, negative an error. */
public final class Status {
    public static final int OK = 0;
    public static final int INPROGRESS = 1;
    public static final int ERR_INVALID_ARG = -1;
    public static final int ERR_NO_MEMORY = -2;
    public static final int ERR_UNSUPPORTED = -3;
    public static final int ERR_VERSION = -4;
    public static final int ERR_NOT_READY = -5;
    public static final int ERR_BUSY = -6;
    public static final int ERR_MISMATCH = -7;
    public static final int ERR_TIMED_OUT = -8;
    public static final int ERR_ABORTED = -9;
    public static final int ERR_PEER_FAILED = -10;
    public static final int ERR_DEVICE = -11;
    public static final int ERR_TRANSPORT = -12;
    public static final int ERR_INTERNAL = -13;

    private Status() {}

    /** The enumerator's name as the library spells it, e.g. {@code "HVD_ERR_MISMATCH"}. */
    public static String name(int status) {
        return NativeLib.get().hvd_status_name(status);
    }

    /** A one-line English description of the status. */
    public static String describe(int status) {
        return NativeLib.get().hvd_strerror(status);
    }
}
