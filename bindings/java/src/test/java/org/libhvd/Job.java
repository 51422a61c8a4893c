// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.function.Executable;

/**
 * Base of the suites: each test class joins the job (run under hvdrun) with its own context
 * and leaves it after its last test. Every rank runs the same tests in the same order.
 */
abstract class Job {
    static Hvd hvd;
    static int rank;
    static int size;

    @BeforeAll
    static void join() {
        hvd = Hvd.init();
        rank = hvd.rank();
        size = hvd.size();
    }

    @AfterAll
    static void leave() {
        hvd.close();
    }

    /** The call throws an HvdException of the given status with a non-empty detail. */
    static <T extends HvdException> T assertStatus(Class<T> type, int status, Executable call) {
        T e = assertThrows(type, call);
        assertEquals(status, e.status(), e.getMessage());
        assertEquals(Status.name(status), e.statusName());
        if (e.detail().isEmpty()) {
            throw new AssertionError("no detail in " + e);
        }
        return e;
    }

    static double[] ranksValues(DType t, int r, int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = Values.value(t, r, i);
        }
        return v;
    }
}
