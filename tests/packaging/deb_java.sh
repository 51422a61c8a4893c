#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_java.sh OUT: a Java program compiled against libhvd.jar from libhvd-java (unpacked in
# OUT/root, with nothing from the build tree) runs a 2-rank job under the packaged hvdrun. The
# jar is named on the class path alone: its manifest reaches JNA as /usr/share/java/jna.jar
# (libjna-java, linked into the scratch root as the dependency would install it), and the
# system loader finds libhvd.so.1 (LD_LIBRARY_PATH stands for the installed libhvd1).
source "$(dirname "$0")/common.sh"
out=$(cd "$1" && pwd)
root=$out/root
libdir=$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
jar=$root/usr/share/java/libhvd.jar
work=$out/java
rm -rf "$work"
mkdir -p "$work"
[ -f "$jar" ] || pkg_fail "libhvd-java did not unpack $jar"
[ -f /usr/share/java/jna.jar ] || pkg_fail "libjna-java is not installed"
ln -sf /usr/share/java/jna.jar "$root/usr/share/java/jna.jar"

cat >"$work/Consumer.java" <<'JAVA'
import org.libhvd.Hvd;
import org.libhvd.ReduceOp;

public final class Consumer {
    public static void main(String[] args) {
        try (Hvd hvd = Hvd.init()) {
            long[] sum = hvd.allreduce(new long[] {hvd.rank() + 1, 10}, ReduceOp.SUM);
            if (sum[0] != 3 || sum[1] != 20) {
                throw new AssertionError("allreduce gave " + sum[0] + ", " + sum[1]);
            }
            System.out.println("rank " + hvd.rank() + ": libhvd " + Hvd.versionString() + " from the package ok");
        }
    }
}
JAVA
javac --release 17 -cp "$jar" -d "$work" "$work/Consumer.java" || pkg_fail "Consumer.java does not compile against $jar"
rc=0
LD_LIBRARY_PATH=$libdir timeout 120 "$root/usr/bin/hvdrun" -np 2 java -cp "$jar:$work" Consumer \
  >"$work/run.log" 2>&1 || rc=$?
cat "$work/run.log"
[ $rc -eq 0 ] || pkg_fail "the Java program failed with exit code $rc"
for r in 0 1; do
  grep -q "^\[$r\]<stdout>: rank $r: libhvd .* from the package ok" "$work/run.log" ||
    pkg_fail "no success line from rank $r"
done
echo "deb_java: a program compiled against the packaged libhvd.jar runs a 2-rank job"
