// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Native;
import java.io.File;
import java.nio.charset.StandardCharsets;

/**
 * Loads libhvd once: the file named by the system property {@code hvd.library} or the
 * environment variable {@code HVD_LIBRARY}, else libhvd.so.1 (or libhvd.so) in a directory of
 * {@code jna.library.path}, else libhvd.so.1 through the system loader (LD_LIBRARY_PATH, the
 * ldconfig cache: what {@code apt install libhvd1} provides).
 */
final class NativeLib {
    static final String SONAME = "libhvd.so.1";

    private static final class Holder {
        static final NativeApi API = Native.load(locate(), NativeApi.class);
    }

    private NativeLib() {}

    static NativeApi get() {
        return Holder.API;
    }

    static String locate() {
        String explicit = System.getProperty("hvd.library");
        if (explicit == null || explicit.isEmpty()) {
            explicit = System.getenv("HVD_LIBRARY");
        }
        if (explicit != null && !explicit.isEmpty()) {
            return explicit;
        }
        String path = System.getProperty("jna.library.path");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                for (String name : new String[] {SONAME, "libhvd.so"}) {
                    File f = new File(dir, name);
                    if (!dir.isEmpty() && f.isFile()) {
                        return f.getAbsolutePath();
                    }
                }
            }
        }
        return SONAME;
    }

    /** The status's name; a plain form when the library cannot say. */
    static String statusName(int status) {
        try {
            return get().hvd_status_name(status);
        } catch (LinkageError e) {
            return "status " + status;
        }
    }

    /** This thread's last error detail. */
    static String lastError() {
        NativeApi api = get();
        long n = api.hvd_last_error(null, 0);
        byte[] buf = new byte[(int) Math.min(n + 1, 1 << 20)];
        api.hvd_last_error(buf, buf.length);
        return cString(buf);
    }

    static String cString(byte[] buf) {
        int n = 0;
        while (n < buf.length && buf[n] != 0) {
            n++;
        }
        return new String(buf, 0, n, StandardCharsets.UTF_8);
    }

    /** Throws the exception of a failed call (detail from hvd_last_error); returns status. */
    static int check(int status) {
        if (status < 0) {
            throw HvdException.of(status, lastError());
        }
        return status;
    }
}
