// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/**
 * A libhvd call or collective failed. {@link #status()} is the C ABI's status code and
 * {@link #detail()} the library's message ({@code hvd_last_error} for a call refused on this
 * rank, {@code hvd_request_message} for a collective that failed while running).
 */
public class HvdException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String detail;

    public HvdException(int status, String detail) {
        super(text(status, detail));
        this.status = status;
        this.detail = detail == null ? "" : detail;
    }

    /** The status code ({@link Status}). */
    public int status() {
        return status;
    }

    /** The status's name, e.g. {@code "HVD_ERR_MISMATCH"}. */
    public String statusName() {
        return NativeLib.statusName(status);
    }

    /** The library's message (may be empty). */
    public String detail() {
        return detail;
    }

    /** The exception for a status: the subclass of its kind, else this class. */
    public static HvdException of(int status, String detail) {
        switch (status) {
            case Status.ERR_PEER_FAILED:
                return new PeerFailedException(detail);
            case Status.ERR_MISMATCH:
                return new MismatchException(detail);
            case Status.ERR_TIMED_OUT:
                return new TimedOutException(detail);
            default:
                return new HvdException(status, detail);
        }
    }

    private static String text(int status, String detail) {
        String name = NativeLib.statusName(status);
        return detail == null || detail.isEmpty() ? name : name + ": " + detail;
    }
}
