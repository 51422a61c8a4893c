// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** Ranks disagreed on a collective's shape, dtype, op, root or scale factors. */
public class MismatchException extends HvdException {
    private static final long serialVersionUID = 1L;

    public MismatchException(String detail) {
        super(Status.ERR_MISMATCH, detail);
    }
}
