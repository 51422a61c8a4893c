// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

/** A peer process died or became unreachable; every request of the context fails with it. */
public class PeerFailedException extends HvdException {
    private static final long serialVersionUID = 1L;

    public PeerFailedException(String detail) {
        super(Status.ERR_PEER_FAILED, detail);
    }
}
