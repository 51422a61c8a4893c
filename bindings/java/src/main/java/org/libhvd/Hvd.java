// SPDX-License-Identifier: Apache-2.0
package org.libhvd;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.DoubleByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Reference;

/**
 * A libhvd context: this process's membership of a job ({@code hvd_context_h}). Made by
 * {@link #init()} (from the launcher's environment, e.g. under hvdrun) and left by
 * {@link #close()}, so {@code try (Hvd hvd = Hvd.init()) { ... }} brackets a job.
 *
 * <p>Every collective has an asynchronous form ({@code ...Async}, returning a {@link Request})
 * and a blocking one; heap arrays have blocking overloads that copy. Calls refused on this rank
 * throw {@link HvdException} at once; collectives that fail while running throw it (or
 * {@link PeerFailedException}, {@link MismatchException}, {@link TimedOutException}) from the
 * request. Any method may be called from any thread.
 */
public final class Hvd implements AutoCloseable {
    private final NativeApi api = NativeLib.get();
    private volatile Pointer ctx;

    private Hvd(Pointer ctx) {
        this.ctx = ctx;
    }

    /** Joins the job the launcher started this process in (blocks until every rank joined). */
    public static Hvd init() {
        return init(InitOptions.create());
    }

    public static Hvd init(InitOptions options) {
        NativeApi api = NativeLib.get();
        Marshal m = new Marshal();
        PointerByReference ctx = new PointerByReference();
        NativeLib.check(api.hvd_init_versioned(Layout.ABI_VERSION, api.hvd_version(), m.initParams(options), ctx));
        Reference.reachabilityFence(m);
        return new Hvd(ctx.getValue());
    }

    /** A new job id (call on exactly one process and pass it to all): starts its rendezvous server. */
    public static byte[] uniqueId() {
        byte[] id = new byte[Layout.UNIQUE_ID_BYTES];
        NativeLib.check(NativeLib.get().hvd_get_unique_id(id));
        return id;
    }

    /** The loaded library's version code (major * 10000 + minor * 100 + patch). */
    public static int version() {
        return NativeLib.get().hvd_version();
    }

    public static String versionString() {
        return NativeLib.get().hvd_version_string();
    }

    /** {@link Features} bits of what this build of the library does. */
    public static long features() {
        return NativeLib.get().hvd_features();
    }

    /** Sets the process-wide default of a knob, which contexts created later start from. */
    public static void setDefaultConfig(ConfigKey key, double value) {
        NativeLib.check(NativeLib.get().hvd_config_set(null, key.code(), value));
    }

    public static double defaultConfig(ConfigKey key) {
        DoubleByReference v = new DoubleByReference();
        NativeLib.check(NativeLib.get().hvd_config_get(null, key.code(), v));
        return v.getValue();
    }

    Pointer handle() {
        Pointer c = ctx;
        if (c == null) {
            throw new IllegalStateException("the libhvd context was closed");
        }
        return c;
    }

    private int intQuery(java.util.function.BiFunction<Pointer, IntByReference, Integer> call) {
        IntByReference r = new IntByReference();
        NativeLib.check(call.apply(handle(), r));
        return r.getValue();
    }

    public int rank() {
        return intQuery((c, r) -> api.hvd_rank(c, null, r));
    }

    public int size() {
        return intQuery((c, r) -> api.hvd_size(c, null, r));
    }

    public int localRank() {
        return intQuery(api::hvd_local_rank);
    }

    public int localSize() {
        return intQuery(api::hvd_local_size);
    }

    public int crossRank() {
        return intQuery(api::hvd_cross_rank);
    }

    public int crossSize() {
        return intQuery(api::hvd_cross_size);
    }

    /** The membership round this context joined in an elastic job (hvdrun --min-np), or -1. */
    public long elasticRound() {
        LongByReference round = new LongByReference();
        NativeLib.check(api.hvd_elastic_membership(handle(), round, null));
        return round.getValue();
    }

    /**
     * Whether workers wait to join a later round of an elastic job (hosts were added): asks
     * hvdrun, so rejoin (close, then a new Hvd) at a consistent point on every rank.
     */
    public boolean elasticMembershipPending() {
        IntByReference pending = new IntByReference();
        NativeLib.check(api.hvd_elastic_membership(handle(), null, pending));
        return pending.getValue() != 0;
    }

    /** Aborts the context: every outstanding request fails with reason, peers with PEER_FAILED. */
    public void abort(int reason) {
        NativeLib.check(api.hvd_abort(handle(), reason));
    }

    /** Throws the context's first fatal error, if it has one. */
    public void checkHealthy() {
        NativeLib.check(api.hvd_context_error(handle()));
    }

    /** Makes a process set of the given global ranks: collective over ALL ranks. */
    public ProcessSet createProcessSet(int... ranks) {
        PointerByReference ps = new PointerByReference();
        NativeLib.check(api.hvd_process_set_create(handle(), ranks, ranks.length, ps));
        return new ProcessSet(this, ps.getValue());
    }

    /** Starts recording this rank's timeline (a Chrome trace) into path. */
    public void timelineStart(String path, boolean markCycles) {
        NativeLib.check(api.hvd_timeline_start(handle(), path, markCycles ? 1 : 0));
    }

    public void timelineStop() {
        NativeLib.check(api.hvd_timeline_stop(handle()));
    }

    /** Sets a knob of this context (see {@link ConfigKey} for units). */
    public void setConfig(ConfigKey key, double value) {
        NativeLib.check(api.hvd_config_set(handle(), key.code(), value));
    }

    public double config(ConfigKey key) {
        DoubleByReference v = new DoubleByReference();
        NativeLib.check(api.hvd_config_get(handle(), key.code(), v));
        return v.getValue();
    }

    // ------------------------------------------------------------ asynchronous collectives

    private interface Enqueue {
        int call(Marshal m, PointerByReference req);
    }

    private int setSize(OpOptions o) {
        return o != null && o.processSet != null ? o.processSet.size() : size();
    }

    private Request enqueue(Enqueue e, Object keepAlive, Tensor[] callerOutputs, int setSize) {
        Marshal m = new Marshal();
        PointerByReference req = new PointerByReference();
        NativeLib.check(e.call(m, req));
        Reference.reachabilityFence(m);
        return new Request(req.getValue(), keepAlive, callerOutputs, setSize);
    }

    /** Elementwise reduction into out (out == in is in place). */
    public Request allreduceAsync(Tensor in, Tensor out, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_allreduce_enqueue(c, m.tensor(in), m.tensor(out), m.params(o), r),
                new Tensor[] {in, out}, new Tensor[] {out}, 0);
    }

    /** Concatenation along the first dimension in rank order; output library-owned. */
    public Request allgatherAsync(Tensor in, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_allgather_enqueue(c, m.tensor(in), m.params(o), r), in, null, 0);
    }

    /** Allgather into a caller-owned output whose first dimension is the sum of all ranks'. */
    public Request allgatherIntoAsync(Tensor in, Tensor out, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_allgather_into_enqueue(c, m.tensor(in), m.tensor(out), m.params(o), r),
                new Tensor[] {in, out}, new Tensor[] {out}, 0);
    }

    /** Copies the root's in to every rank's out (out == in is in place). */
    public Request broadcastAsync(Tensor in, Tensor out, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_broadcast_enqueue(c, m.tensor(in), m.tensor(out), m.params(o), r),
                new Tensor[] {in, out}, new Tensor[] {out}, 0);
    }

    /** Rows to every rank of the set (OpOptions.splits, default even); see Request.receivedSplits. */
    public Request alltoallAsync(Tensor in, OpOptions o) {
        Pointer c = handle();
        int n = setSize(o);
        return enqueue((m, r) -> api.hvd_alltoall_enqueue(c, m.tensor(in), m.params(o), r), in, null, n);
    }

    /** Sum or Average over the set, each rank keeping its block of rows. */
    public Request reducescatterAsync(Tensor in, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_reducescatter_enqueue(c, m.tensor(in), m.params(o), r), in, null, 0);
    }

    public Request barrierAsync(OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_barrier_enqueue(c, m.params(o), r), null, null, 0);
    }

    /** Horovod's join; the request's value is the rank that joined last. */
    public Request joinAsync(OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_join_enqueue(c, m.params(o), r), null, null, 0);
    }

    public Request groupedAllreduceAsync(Tensor[] ins, Tensor[] outs, OpOptions o) {
        if (ins.length != outs.length) {
            throw new IllegalArgumentException(ins.length + " inputs but " + outs.length + " outputs");
        }
        Pointer c = handle();
        Tensor[] both = new Tensor[ins.length * 2];
        System.arraycopy(ins, 0, both, 0, ins.length);
        System.arraycopy(outs, 0, both, ins.length, outs.length);
        return enqueue((m, r) -> api.hvd_grouped_allreduce_enqueue(
                c, m.tensors(ins), m.tensors(outs), ins.length, m.params(o), r), both, outs.clone(), 0);
    }

    public Request groupedAllgatherAsync(Tensor[] ins, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_grouped_allgather_enqueue(c, m.tensors(ins), ins.length, m.params(o), r),
                ins.clone(), null, 0);
    }

    public Request groupedReducescatterAsync(Tensor[] ins, OpOptions o) {
        Pointer c = handle();
        return enqueue((m, r) -> api.hvd_grouped_reducescatter_enqueue(
                c, m.tensors(ins), ins.length, m.params(o), r), ins.clone(), null, 0);
    }

    // ------------------------------------------------------------ blocking collectives

    private static Tensor first(Request r) {
        try (r) {
            return r.await().output(0);
        }
    }

    private static void done(Request r) {
        try (r) {
            r.await();
        }
    }

    private static Tensor[] all(Request r, int n) {
        try (r) {
            r.await();
            Tensor[] out = new Tensor[n];
            for (int i = 0; i < n; i++) {
                out[i] = r.output(i);
            }
            return out;
        }
    }

    /** In-place allreduce. */
    public void allreduce(Tensor inout, OpOptions o) {
        done(allreduceAsync(inout, inout, o));
    }

    public Tensor allgather(Tensor in, OpOptions o) {
        return first(allgatherAsync(in, o));
    }

    /** In-place broadcast from root (a rank of the global set). */
    public void broadcast(Tensor inout, int root) {
        done(broadcastAsync(inout, inout, OpOptions.create().root(root)));
    }

    public Tensor alltoall(Tensor in, OpOptions o) {
        return first(alltoallAsync(in, o));
    }

    public Tensor reducescatter(Tensor in, OpOptions o) {
        return first(reducescatterAsync(in, o));
    }

    public void barrier() {
        done(barrierAsync(null));
    }

    /** Joins and returns the rank that joined last. */
    public int join() {
        try (Request r = joinAsync(null)) {
            return (int) r.await().value();
        }
    }

    /** In-place grouped allreduce. */
    public void groupedAllreduce(Tensor[] inouts, OpOptions o) {
        done(groupedAllreduceAsync(inouts, inouts, o));
    }

    public Tensor[] groupedAllgather(Tensor[] ins, OpOptions o) {
        return all(groupedAllgatherAsync(ins, o), ins.length);
    }

    public Tensor[] groupedReducescatter(Tensor[] ins, OpOptions o) {
        return all(groupedReducescatterAsync(ins, o), ins.length);
    }

    // ------------------------------------------------------------ heap arrays (copied)

    private static OpOptions with(ReduceOp op) {
        return OpOptions.create().op(op);
    }

    public float[] allreduce(float[] x, ReduceOp op) {
        Tensor t = Tensor.copyOf(x);
        allreduce(t, with(op));
        return t.toFloatArray();
    }

    public double[] allreduce(double[] x, ReduceOp op) {
        Tensor t = Tensor.copyOf(x);
        allreduce(t, with(op));
        return t.toDoubleArray();
    }

    public int[] allreduce(int[] x, ReduceOp op) {
        Tensor t = Tensor.copyOf(x);
        allreduce(t, with(op));
        return t.toIntArray();
    }

    public long[] allreduce(long[] x, ReduceOp op) {
        Tensor t = Tensor.copyOf(x);
        allreduce(t, with(op));
        return t.toLongArray();
    }

    /** Concatenation of every rank's array, in rank order. */
    public float[] allgather(float[] x) {
        return allgather(Tensor.copyOf(x), null).toFloatArray();
    }

    public double[] allgather(double[] x) {
        return allgather(Tensor.copyOf(x), null).toDoubleArray();
    }

    public int[] allgather(int[] x) {
        return allgather(Tensor.copyOf(x), null).toIntArray();
    }

    public long[] allgather(long[] x) {
        return allgather(Tensor.copyOf(x), null).toLongArray();
    }

    /** The root's array on every rank (x has the root's length everywhere). */
    public float[] broadcast(float[] x, int root) {
        Tensor t = Tensor.copyOf(x);
        broadcast(t, root);
        return t.toFloatArray();
    }

    public double[] broadcast(double[] x, int root) {
        Tensor t = Tensor.copyOf(x);
        broadcast(t, root);
        return t.toDoubleArray();
    }

    public int[] broadcast(int[] x, int root) {
        Tensor t = Tensor.copyOf(x);
        broadcast(t, root);
        return t.toIntArray();
    }

    public long[] broadcast(long[] x, int root) {
        Tensor t = Tensor.copyOf(x);
        broadcast(t, root);
        return t.toLongArray();
    }

    /** Leaves the context (collective on a healthy context; bounded by the bootstrap timeout). */
    @Override
    public void close() {
        Pointer c = ctx;
        if (c == null) {
            return;
        }
        ctx = null;
        NativeLib.check(api.hvd_finalize(c));
    }
}
