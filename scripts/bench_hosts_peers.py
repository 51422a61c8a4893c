# SPDX-License-Identifier: Apache-2.0
"""The runs of scripts/bench_hosts.py: libhvd and its peers across the hosts of a Cluster.

Every run is a Launch: start() it on the cluster, and it returns (exit status, rank 0's
output), killing what it started when it outlives its timeout. Each prints hvd_bench's
columns (size_bytes count dtype op time_us algbw_GBps busbw_GBps), which parse_table reads.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# hvdrun's and horovodrun's per-rank line prefixes ("[0]<stdout>: ")
RANK_PREFIX = re.compile(r"^\[[0-9,]+\]<std(?:out|err)>:\s?")
GRACE_S = 10  # how long the other ranks of a multi-process run get after one fails
TORCH_PORT = 29500  # MASTER_PORT base of the torch.distributed runs (ports are per namespace)


def bus_factor(collective, n):
    """busbw / algbw, as bench/peers/README.md defines it for n ranks."""
    return {"allreduce": 2.0 * (n - 1) / n, "allgather": (n - 1) / n}.get(collective, 1.0)


def parse_table(out, factor):
    """{size_bytes: busbw in GB/s} from the result lines of a run's output, from size_bytes
    and time_us (the printed busbw column has too few digits for small sizes); factor is
    bus_factor's."""
    rows = {}
    for line in out.splitlines():
        fields = RANK_PREFIX.sub("", line).split()
        if len(fields) == 7 and fields[0].isdigit() and float(fields[4]) > 0:
            rows[int(fields[0])] = int(fields[0]) / float(fields[4]) / 1e3 * factor
    return rows


def _kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def shape_links(cluster, netem):
    """tc netem (e.g. "delay 50us rate 10gbit") on every host's data0, or its rate and loss
    alone where the kernel has no sch_netem (Host.shape). Returns what was applied on every
    host ("" for nothing), after saying what was not."""
    applied = netem
    for h in cluster.hosts if netem else ():
        applied, why = h.shape("data0", netem)
        if why:
            print("# %s: %s" % (h.name, why), flush=True)
        if not applied:
            print("# links not shaped", flush=True)
            break
    return applied


def run_one(host, argv, timeout, env=None):
    """(exit status, output) of argv run in host; 124 when it ran past timeout seconds."""
    p = host.start(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, _ = p.communicate(timeout=10)
        return 124, (out or "") + "\n(killed after %d s)\n" % timeout


def run_ranks(starts, logdir, timeout):
    """Starts every (host, argv, env) of starts as one rank each (rank i = starts[i]) and
    waits for all. Returns (first non-zero status or 0, rank 0's output, all ranks' output
    when one failed). A failure gives the others GRACE_S, then they are killed."""
    procs, logs = [], []
    for i, (host, argv, env) in enumerate(starts):
        path = os.path.join(logdir, "rank%d.log" % i)
        with open(path, "w") as log:
            procs.append(host.start(argv, env=env, stdout=log, stderr=subprocess.STDOUT))
        logs.append(path)
    deadline = time.monotonic() + timeout
    rc = 0
    while [p.poll() for p in procs].count(None):
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        if failed and rc == 0:
            rc = failed[0]
            deadline = min(deadline, time.monotonic() + GRACE_S)
        if time.monotonic() > deadline:
            rc = rc or 124
            break
        time.sleep(0.1)
    for p in procs:
        if p.poll() is None:
            _kill_group(p)
    rc = rc or next((p.returncode for p in procs if p.returncode != 0), 0)
    texts = []
    for path in logs:
        with open(path) as f:
            texts.append(f.read())
    detail = "" if rc == 0 else "".join("--- rank %d\n%s" % (i, t) for i, t in enumerate(texts))
    return rc, texts[0], detail


class Setup:
    """What every launch needs: the cluster, its ssh key, ranks per host, the sizes, paths,
    and whether the hosts' ranks share this machine's CPUs beyond one rank per CPU (which
    none of the libraries can see: each host shows all of them)."""

    def __init__(self, cluster, key, ranks_per_host, sizes, seconds, build, repo, horovod_venv,
                 shared_cpus):
        self.cluster = cluster
        self.key = key
        self.layout = layout_of(ranks_per_host, len(cluster.hosts))  # ranks on each host
        self.sizes = sizes  # "4K,64K,..." as the benchmarks' -x takes it
        self.seconds = seconds
        self.build = build
        self.repo = repo
        self.horovod_venv = horovod_venv
        self.shared_cpus = shared_cpus
        self.runs = 0

    @property
    def np(self):
        return sum(self.layout)

    @property
    def first(self):
        return self.sizes.split(",")[0]

    def host_list(self):
        return ",".join("%s:%d" % (h.name, n) for h, n in zip(self.cluster.hosts, self.layout))

    def place(self, rank):
        """Rank's host index and local rank (hosts in order, filled as hvdrun -H fills them)."""
        for host, n in enumerate(self.layout):
            if rank < n:
                return host, rank
            rank -= n
        raise ValueError("rank beyond the layout")

    def sweep(self):
        """-b/-e/-x of hvd_bench and the C peers: exactly the sizes asked for."""
        return ["-b", self.first, "-e", self.first, "-x", self.sizes, "-t", self.seconds]


def hvd(setup, mode, collective, timeout):
    """libhvd's hvd_bench under hvdrun, HVD_HIERARCHICAL_<COLLECTIVE>=mode; with shared CPUs,
    the spin settings libhvd takes itself where a host runs more ranks than it has CPUs."""
    argv = [os.path.join(setup.build, "tools", "hvdrun", "hvdrun"), "-np", str(setup.np),
            "-H", setup.host_list(), "--ssh-identity-file", setup.key,
            "--network-interfaces", "data0",
            "-x", "HVD_HIERARCHICAL_%s=%s" % (collective.upper(), mode)]
    if setup.shared_cpus:
        argv += ["-x", "HVD_SPIN_YIELD=1", "-x", "HVD_SPIN_US=200"]
    argv += [os.path.join(setup.build, "bench", "hvd_bench"), "-c", collective, "-C", "0"]
    return run_one(setup.cluster.hosts[0], argv + setup.sweep(), timeout)


def mpi(setup, collective, timeout):
    """Open MPI's ob1 over TCP between hosts (vader within one), orted started over ssh;
    unbound, as hvdrun starts its ranks; with shared CPUs, yielding when idle, as Open MPI
    does itself on a node with more ranks than slots."""
    argv = ["mpirun", "--allow-run-as-root", "-np", str(setup.np), "-H", setup.host_list(),
            "--mca", "plm_rsh_args", "-i " + setup.key, "--bind-to", "none",
            "--mca", "pml", "ob1", "--mca", "btl", "tcp,self,vader",
            "--mca", "btl_tcp_if_include", "data0"]
    if setup.shared_cpus:
        argv += ["--mca", "mpi_yield_when_idle", "1"]
    argv += [os.path.join(setup.build, "bench", "peers", "mpi_allreduce_perf"), "-c", collective,
             "-C", "0"]
    return run_one(setup.cluster.hosts[0], argv + setup.sweep(), timeout)


def _per_rank(setup, argv_of, env_of, timeout):
    """Starts rank r of each host directly in it (hosts in order, setup.layout ranks each)."""
    logdir = tempfile.mkdtemp(prefix="run", dir=setup.cluster.state)
    try:
        starts = []
        for r in range(setup.np):
            index, local = setup.place(r)
            host = setup.cluster.hosts[index]
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(setup.np), LOCAL_RANK=str(local),
                       LOCAL_WORLD_SIZE=str(setup.layout[index]))
            env.update(env_of(logdir))
            starts.append((host, argv_of(host), env))
        return run_ranks(starts, logdir, timeout)
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def _store_dir(logdir):
    path = os.path.join(logdir, "store")
    os.makedirs(path, exist_ok=True)
    return path


def gloo(setup, collective, timeout):
    """Gloo's C++ API over TCP, each rank bound to its host's data0 address; FileStore
    rendezvous in a directory every host sees."""
    program = os.path.join(setup.build, "bench", "peers", "gloo_allreduce_perf")
    rc, out, detail = _per_rank(
        setup,
        lambda host: [program, "-H", host.data_addr, "-c", collective, "-C", "0"] +
        setup.sweep(),
        lambda logdir: {"GLOO_STORE_DIR": _store_dir(logdir)}, timeout)
    return rc, out + detail


def torch(setup, collective, timeout):
    """torch.distributed's gloo backend (/usr/bin/python3's torch) over data0."""
    setup.runs += 1
    script = os.path.join(setup.build, "bench", "peers", "torch_allreduce_perf.py")
    master = {"MASTER_ADDR": setup.cluster.hosts[0].data_addr,
              "MASTER_PORT": str(TORCH_PORT + setup.runs % 1000), "GLOO_SOCKET_IFNAME": "data0"}
    rc, out, detail = _per_rank(
        setup,
        lambda host: ["/usr/bin/python3", script, "-c", collective, "-C", "0"] + setup.sweep(),
        lambda logdir: master, timeout)
    return rc, out + detail


def horovod_missing(setup):
    """Why Horovod cannot run ("" when it can): scripts/bench.sh --horovod builds it."""
    if not os.access(os.path.join(setup.horovod_venv, "bin", "horovodrun"), os.X_OK):
        return "no Horovod build in %s (scripts/bench.sh --horovod makes one)" % (
            setup.horovod_venv)
    return ""


def horovod(setup, collective, timeout):
    """Horovod's horovod.torch allreduce_ under horovodrun --gloo, ssh'ing with the cluster's
    key (bench/python_allreduce_perf.py: the Python path, as a Horovod user calls it)."""
    venv = setup.horovod_venv
    argv = [os.path.join(venv, "bin", "horovodrun"), "-np", str(setup.np),
            "-H", setup.host_list(), "--gloo", "--ssh-identity-file", setup.key,
            "--network-interfaces", "data0", "--start-timeout", "60",
            os.path.join(venv, "bin", "python"),
            os.path.join(setup.repo, "bench", "python_allreduce_perf.py"),
            "--module", "horovod.torch", "-b", setup.first, "-e", setup.first,
            "-x", setup.sizes, "-t", setup.seconds]
    return run_one(setup.cluster.hosts[0], argv, timeout)


# --peers names: (runner, collectives it measures)
PEERS = {
    "mpi": (mpi, ("allreduce", "allgather", "broadcast")),
    "gloo": (gloo, ("allreduce", "allgather", "broadcast")),
    "torch": (torch, ("allreduce", "allgather", "broadcast")),
    "horovod": (horovod, ("allreduce",)),
}


def shared_cpus(args):
    """Whether the hosts' ranks outnumber this machine's CPUs (--shared-cpus auto), which no
    library can see from inside a namespace host."""
    if args.shared_cpus != "auto":
        return args.shared_cpus == "1"
    return sum(layout_of(args.ranks_per_host, args.hosts)) > len(os.sched_getaffinity(0))


def layout_of(ranks_per_host, hosts):
    """The ranks on each of `hosts` hosts from --ranks-per-host: one number for every host
    ("2") or one per host ("2,1"); ValueError when it is neither."""
    try:
        counts = [int(n) for n in str(ranks_per_host).split(",")]
    except ValueError:
        counts = []
    if len(counts) == 1:
        counts *= hosts
    if len(counts) != hosts or min(counts) < 1:
        raise ValueError("--ranks-per-host %s: give one count of 1 or more, or one per host "
                         "(%d)" % (ranks_per_host, hosts))
    return counts


def table_title(args, what, figure):
    """The first line of a table: what ran, on which hosts and settings, and the figure."""
    layout = layout_of(args.ranks_per_host, args.hosts)
    shape = ("%d hosts x %d ranks" % (args.hosts, layout[0]) if len(set(layout)) == 1 else
             "%d hosts of %s ranks" % (args.hosts, "+".join(map(str, layout))))
    return ("# %s, %s on %d CPUs (shared-CPU settings: %s), %d reps, median %s; netem: %s" %
            (what, shape, len(os.sched_getaffinity(0)),
             "yes" if shared_cpus(args) else "no", args.reps, figure, args.netem or "none"))


def run_on_cluster(prog, args, measure, report):
    """A benchmark script's main: args.hosts namespace hosts with an sshd each, their links
    shaped by args.netem where the kernel can, then measure(cluster, key, build) ->
    (results, failures) and report(results) -> lines, printed and kept in args.out/table.txt.
    Returns the exit status: 1 when a run failed, 2 when --netem names a rate or loss that tc
    would not take, 77 when no cluster can be built here."""
    from netns_cluster import Cluster, Skip, install_signal_teardown, without_netem
    from ssh_hosts import start_sshd

    try:
        without_netem(args.netem)  # a rate or loss tc would not take, named before any setup
    except ValueError as e:
        print("%s: --netem %r: %s" % (prog, args.netem, e))
        return 2
    install_signal_teardown()
    build = os.path.abspath(args.build)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    names = ["host%c" % (ord("A") + i) for i in range(args.hosts)]
    try:
        with Cluster(names) as cluster:
            key = start_sshd(cluster)
            args.netem = shape_links(cluster, args.netem)
            print("# load before: %r" % (os.getloadavg(),), flush=True)
            results, failures = measure(cluster, key, build)
            print("# load after: %r" % (os.getloadavg(),), flush=True)
    except Skip as e:
        print("%s: cannot build a cluster here: %s" % (prog, e))
        return 77
    table = "".join(line + "\n" for line in report(results))
    sys.stdout.write(table)
    if args.out:
        with open(os.path.join(args.out, "table.txt"), "w") as f:
            f.write(table)
    return 1 if failures else 0
