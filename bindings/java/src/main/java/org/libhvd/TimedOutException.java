// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** The operation itself exceeded its timeout; the context is aborted. */
public class TimedOutException extends HvdException {
    private static final long serialVersionUID = 1L;

    public TimedOutException(String detail) {
        super(Status.ERR_TIMED_OUT, detail);
    }
}
