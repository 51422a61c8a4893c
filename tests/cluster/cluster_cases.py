#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Multi-host cases on a namespace cluster (netns_cluster.py) with real sshd (ssh_hosts.py).

    cluster_cases.py --hvdrun HVDRUN --programs DIR [--python-path DIR] CASE

DIR holds the mp test programs; --python-path, the hvd package's build directory, is for the
elastic cases. Exits 0 when the case passes, 77 (ctest's
skip) with the reason when this machine cannot build a cluster, 1 otherwise. Every case runs
under a deadline (--deadline seconds) and tears its cluster down however it ends.
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from netns_cluster import SKIP, Cluster, Skip, install_signal_teardown  # noqa: E402
from slurm_hosts import start_slurm  # noqa: E402
from ssh_hosts import start_sshd  # noqa: E402

HOSTS = ["hostA", "hostB", "hostC"]
# A failing assertion aborts its rank at once; no op waits longer than the case.
MP_ENV = {"CMOCKA_TEST_ABORT": "1", "MP_RANKS_PER_HOST": "2", "HVD_OP_TIMEOUT": "40", "HVD_START_TIMEOUT": "30"}


class Failed(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failed(what)


class Job:
    """One cluster case's environment: the cluster, the client key, the build's programs."""

    def __init__(self, cluster, key, args):
        self.cluster = cluster
        self.key = key
        self.hvdrun_path = os.path.abspath(args.hvdrun)
        self.programs = os.path.abspath(args.programs)
        self.python_path = os.path.abspath(args.python_path) if args.python_path else ""

    def program(self, name):
        return os.path.join(self.programs, name)

    def hvdrun(self, host_slots, program, env=None, extra=(), timeout=60):
        """Runs hvdrun on the first host with -H host_slots; returns (exit code, output, s)."""
        exports = dict(MP_ENV, **(env or {}))
        argv = [self.hvdrun_path, "-np", str(sum(n for _, n in host_slots)), "-H",
                ",".join("%s:%d" % hs for hs in host_slots), "--ssh-identity-file", self.key]
        for k, v in exports.items():
            argv += ["-x", "%s=%s" % (k, v)]
        argv += list(extra) + [self.program(program)]
        return self.timed(self.cluster.hosts[0], argv, timeout)

    def timed(self, host, argv, timeout, env=None):
        start = time.monotonic()
        print("$ %s" % " ".join(argv), flush=True)
        try:
            r = host.run(argv, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            raise Failed("%s(still running after %d s: killed)" % (out, timeout))
        took = time.monotonic() - start
        print("%s(exit %d after %.1f s)" % (r.stdout, r.returncode, took))
        return r.returncode, r.stdout, took

    def read_processes(self, host, entry):
        """(pid, the bytes of /proc/PID/<entry>) of every process running in host."""
        found = []
        for pid in os.popen("ip netns pids %s" % host.ns).read().split():
            try:
                with open("/proc/%s/%s" % (pid, entry), "rb") as f:
                    found.append((pid, f.read()))
            except OSError:
                continue  # ended since it was listed
        return found

    def processes(self, host):
        """(pid, command name) of every process running in host."""
        return [(pid, comm.decode().strip()) for pid, comm in self.read_processes(host, "comm")]

    def running(self, host, argv):
        """Whether a process of host runs exactly argv (its /proc/PID/cmdline)."""
        want = [a.encode() for a in argv]
        return any(cmdline.split(b"\0")[:-1] == want
                   for _, cmdline in self.read_processes(host, "cmdline"))

    def leftovers(self):
        """Processes still running in the hosts other than their sshd (none once a job ends)."""
        return ["%s: pid %s (%s)" % (h.name, pid, comm) for h in self.cluster.hosts
                for pid, comm in self.processes(h) if comm != "sshd"]

    def wait_no_leftovers(self, within=10.0, daemons=()):
        """Fails unless, within `within` s, only sshd and `daemons` (names of what the case
        started in the hosts) still run there."""
        def left():
            return [p for p in self.leftovers()
                    if p.rsplit("(", 1)[-1].rstrip(")") not in daemons]
        deadline = time.monotonic() + within
        while left() and time.monotonic() < deadline:
            time.sleep(0.2)
        expect(not left(), "processes left on the hosts after the job: %s" % left())

    def link_bytes(self, iface):
        """Bytes received from every host's iface, as the bridge side of its veth counts them."""
        total = 0
        for h in self.cluster.hosts:
            with open("/sys/class/net/%s/statistics/rx_bytes" % h.outer[iface]) as f:
                total += int(f.read())
        return total


def case_hvdrun(job):
    """hvdrun -H hostA:2,hostB:2,hostC:2 over ssh; the collectives' values are checked by the
    program on every rank; no rank is left running anywhere afterwards."""
    rc, out, _ = job.hvdrun([(h, 2) for h in HOSTS], "mp_collectives")
    expect(rc == 0, "hvdrun exited %d" % rc)
    for rank in range(6):
        expect(re.search(r"^\[%d\]" % rank, out, re.M), "no output from rank %d" % rank)
    job.wait_no_leftovers()


def case_bind(job):
    """hvdrun -H hostA:2,hostB:2 --bind-to core --report-bindings: every host pins its own
    ranks (hvdrun --exec-bound on hostB, from hostB's topology), local rank r to core r; each
    rank reads its CPUs back from /proc, and every rank's binding is reported by its host."""
    cores = int(subprocess.run(["hwloc-calc", "-N", "core", "all"], stdout=subprocess.PIPE,
                               text=True, check=True, timeout=30).stdout)
    if cores < 2:
        raise Skip("this machine has %d core: nothing to tell two local ranks apart" % cores)
    want = [subprocess.run(["hwloc-calc", "--po", "-I", "pu", "core:%d" % r],
                           stdout=subprocess.PIPE, text=True, check=True,
                           timeout=30).stdout.strip() for r in range(2)]
    show = "awk '/^Cpus_allowed_list/ { print \"cpus=\" $2 }' /proc/self/status"
    argv = [job.hvdrun_path, "-np", "4", "-H", "hostA:2,hostB:2", "--ssh-identity-file", job.key,
            "--bind-to", "core", "--report-bindings", "sh", "-c", show]
    rc, out, _ = job.timed(job.cluster.hosts[0], argv, 60)
    expect(rc == 0, "hvdrun exited %d" % rc)
    for rank in range(4):
        got = re.search(r"^\[%d\]<stdout>: cpus=(\S+)$" % rank, out, re.M)
        expect(got, "rank %d did not print its CPUs" % rank)
        cpus = ",".join(str(c) for c in expand_cpus(got.group(1)))
        expect(cpus == want[rank % 2], "rank %d (local rank %d) runs on CPUs %s, hwloc says "
               "core %d is %s" % (rank, rank % 2, cpus, rank % 2, want[rank % 2]))
        host = HOSTS[rank // 2]
        expect(re.search(r"\[%s:\d+\] MCW rank %d bound to socket \d+\[core %d\[hwt"
                         % (host, rank, rank % 2), out, re.M),
               "no binding report of rank %d from %s" % (rank, host))
    job.wait_no_leftovers()


def expand_cpus(text):
    """"0-2,5" -> [0, 1, 2, 5]."""
    cpus = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus += list(range(int(lo), int(hi or lo) + 1))
    return cpus


HIERARCHICAL_ENV = {"HVD_HIERARCHICAL_ALLREDUCE": "1", "HVD_HIERARCHICAL_ALLGATHER": "1",
                    "HVD_HIERARCHICAL_BROADCAST": "1", "HVD_LOG_LEVEL": "debug"}


def expect_hierarchy_set_up(out):
    """Every one of the 6 ranks said (HVD_LOG_LEVEL=debug) that it runs all hierarchically."""
    said = len(re.findall(r"hierarchical allreduce from 0 bytes: 3 hosts, 2 shares", out))
    expect(said == 6, "%d of 6 ranks set the hierarchical allreduce up" % said)
    said = len(re.findall(r"hierarchical allgather from 0 to any bytes, broadcast from 0 bytes: 3 hosts",
                          out))
    expect(said == 6, "%d of 6 ranks set the hierarchical allgather and broadcast up" % said)


def case_hierarchical(job):
    """Every allreduce, allgather and broadcast hierarchical across the three hosts (shared
    memory within each, one flow per local rank between them): the program's checked values
    pass on every rank, and every rank set the hierarchy up."""
    rc, out, _ = job.hvdrun([(h, 2) for h in HOSTS], "mp_collectives", env=HIERARCHICAL_ENV)
    expect(rc == 0, "hvdrun exited %d" % rc)
    expect_hierarchy_set_up(out)
    job.wait_no_leftovers()


# TCP sockets with the smallest buffers the kernel allows (it raises 2k to its floor): the
# socket often takes only part of a message, and UCX completes the send with the rest in its
# own buffer, which leaves only while the rank drives UCX.
CONGESTED_ENV = {"UCX_TCP_SNDBUF": "2k", "UCX_TCP_RCVBUF": "2k", "HVD_OP_TIMEOUT": "20"}


def case_congested(job):
    """The hierarchical collectives over congested sockets (CONGESTED_ENV): a rank that has
    finished its step across hosts and waits in shared memory for its host's ranks must keep
    driving UCX, or the peer waiting for its held bytes, and with it the whole job, waits for
    ever."""
    rc, out, _ = job.hvdrun([(h, 2) for h in HOSTS], "mp_collectives",
                            env=dict(HIERARCHICAL_ENV, **CONGESTED_ENV))
    expect(rc == 0, "hvdrun exited %d with congested sockets" % rc)
    expect_hierarchy_set_up(out)
    job.wait_no_leftovers()


def case_congested_flat(job):
    """The flat collectives over congested sockets (CONGESTED_ENV): an engine that goes idle
    after a collective lets UCX hand over what it held (its event fd wakes the engine)."""
    env = dict(CONGESTED_ENV, HVD_HIERARCHICAL_ALLREDUCE="0", HVD_HIERARCHICAL_ALLGATHER="0",
               HVD_HIERARCHICAL_BROADCAST="0")
    rc, _, _ = job.hvdrun([(h, 2) for h in HOSTS], "mp_collectives", env=env)
    expect(rc == 0, "hvdrun exited %d with congested sockets" % rc)
    job.wait_no_leftovers()


def case_hvdrun_stopped(job):
    """hvdrun stopped by SIGTERM: its remote ranks end too (ssh itself forwards no signal)."""
    host = job.cluster.hosts[0]
    argv = [job.hvdrun_path, "-np", "3", "-H", ",".join("%s:1" % h for h in HOSTS),
            "--ssh-identity-file", job.key, "sleep", "600"]
    p = host.start(argv)
    deadline = time.monotonic() + 30  # three ssh logins on a loaded machine
    # The rank's own command line: a forked shell on its way to exec it is no rank yet.
    started = lambda: all(job.running(h, ["sleep", "600"]) for h in job.cluster.hosts)
    while not started() and time.monotonic() < deadline:
        time.sleep(0.1)
    expect(started(), "the ranks did not start: %s" % job.leftovers())
    # hvdrun runs under `ip netns exec` and `unshare`, which exec it: p.pid is hvdrun.
    os.kill(p.pid, signal.SIGTERM)
    expect(p.wait(timeout=20) == 128 + signal.SIGTERM, "hvdrun exited %s" % p.returncode)
    job.wait_no_leftovers()


ELASTIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "elastic")
sys.path.insert(0, ELASTIC_DIR)
from discovery import discovery_files  # noqa: E402
TORCH_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch


def elastic_run(job, flags, script_args, changes, survivors, extra_env=None, np=3):
    """hvdrun -np `np` --min-np 2 `flags` on hostA runs tests/python/elastic/train_elastic.py
    with `script_args`; workers `survivors` must finish, in that order, as the ranks of round
    2 with the weights of the reference run that had the membership `changes`
    (elastic_model.reference), and no process may be left on any host. Returns hvdrun's
    output."""
    if not job.python_path or not os.access(TORCH_PYTHON, os.X_OK):
        raise Skip("no hvd Python package (--python-path) or no %s" % TORCH_PYTHON)
    ref = subprocess.run(
        [TORCH_PYTHON, "-c", "import elastic_model as m; "
         "print(' '.join(repr(float(v)) for v in m.reference(%d, %r)))" % (np, changes)],
        cwd=ELASTIC_DIR, stdout=subprocess.PIPE, text=True, check=True, timeout=60)
    expected = [float(v) for v in ref.stdout.split()]
    env = dict(MP_ENV, PYTHONPATH=job.python_path, PYTHONDONTWRITEBYTECODE="1")
    env.update(extra_env or {})
    argv = [job.hvdrun_path, "-np", str(np), "--min-np", "2", "--ssh-identity-file", job.key]
    argv += list(flags)
    for k, v in env.items():
        argv += ["-x", "%s=%s" % (k, v)]
    argv += [TORCH_PYTHON, os.path.join(ELASTIC_DIR, "train_elastic.py")] + list(script_args)
    rc, out, _ = job.timed(job.cluster.hosts[0], argv, 150)
    expect(rc == 0, "hvdrun exited %d" % rc)
    workers = ", ".join(str(w) for w in survivors)
    expect("round 2: %d rank(s), workers %s" % (len(survivors), workers) in out,
           "round 2 did not form with workers %s" % workers)
    results = [json.loads(line[line.index("{"):]) for line in out.splitlines()
               if "<stdout>: {" in line]
    expect(sorted((r["worker"], r["rank"], r["size"]) for r in results) ==
           [(w, i, len(survivors)) for i, w in enumerate(survivors)], "survivors: %s" % results)
    for r in results:
        diff = max(abs(a - b) for a, b in zip(r["weights"], expected))
        expect(diff <= 1e-9, "worker %d's weights differ from the reference by %g"
               % (r["worker"], diff))
    job.wait_no_leftovers()
    return out


def case_elastic(job):
    """An elastic job across hosts: hvdrun -np 3 --min-np 2 -H hostA:1,hostB:1,hostC:1 runs
    tests/python/elastic/train_elastic.py; the worker on hostB kills itself at step 5, the
    workers on hostA and hostC re-form as 2 ranks and finish with the weights of the
    reference run that had that membership change at that step."""
    elastic_run(job, ["-H", ",".join("%s:1" % h for h in HOSTS)],
                ["--kill-worker", "1", "--kill-step", "5"], {5: (2, True)}, (0, 2))


def case_elastic_host_lost(job):
    """A host vanishes from an elastic job: at step 5 the worker on hostB takes every link
    of its host down and dies, so nothing of hostB answers or closes a connection again (a
    powered-off machine). Within HVD_PEER_TIMEOUT (6 s here) the rendezvous connection's
    keepalive fails the survivors' step and ssh gives up on hostB; the workers on hostA and
    hostC re-form as 2 ranks and finish with the weights of the reference run."""
    start = time.monotonic()
    elastic_run(job, ["-H", ",".join("%s:1" % h for h in HOSTS)],
                ["--kill-worker", "1", "--kill-step", "5", "--cut-off-host"], {5: (2, True)},
                (0, 2), extra_env={"HVD_PEER_TIMEOUT": "6"})
    took = time.monotonic() - start
    expect(took < 120, "the job took %.0f s to get past the lost host" % took)


def case_elastic_grow(job):
    """A host joins an elastic job: the discovery script lists hostA and hostB (one slot
    each); at step 4 rank 0 adds hostC to its file and waits until hvdrun has started a
    worker there over ssh; the commit of step 6 raises HostsUpdatedInterrupt and the three
    re-form, the new worker receiving rank 0's state, and all finish with the weights of the
    reference run that grew to 3 ranks at step 6. With --bind-to core each worker is pinned
    on its own host, the added one too, and says so (--report-bindings)."""
    with tempfile.TemporaryDirectory() as tmp:
        hosts, discover = discovery_files(tmp, HOSTS[:2])
        out = elastic_run(job, ["--max-np", "3", "--host-discovery-script", discover,
                                "--bind-to", "core", "--report-bindings"],
                          ["--hosts-file", hosts, "--add-host", HOSTS[2], "--add-step", "4"],
                          {6: (3, False)}, (0, 1, 2), np=2)
    for worker, host in enumerate(HOSTS):
        expect(re.search(r"\[%s:\d+\] MCW rank %d bound to socket \d+\[core 0\[" % (host, worker),
                         out), "worker %d did not report its binding on %s" % (worker, host))


def case_elastic_below_min(job):
    """-np 2 --min-np 2 -H hostA:1,hostB:1: at step 2 hostB vanishes (its worker takes every
    link down and dies). The job cannot go on with 1 worker: hvdrun ends it with an error
    naming --min-np, within a bounded time, no worker finishing and nothing left running."""
    if not job.python_path or not os.access(TORCH_PYTHON, os.X_OK):
        raise Skip("no hvd Python package (--python-path) or no %s" % TORCH_PYTHON)
    env = dict(MP_ENV, PYTHONPATH=job.python_path, PYTHONDONTWRITEBYTECODE="1",
               HVD_PEER_TIMEOUT="6")
    argv = [job.hvdrun_path, "-np", "2", "--min-np", "2", "--ssh-identity-file", job.key,
            "-H", "%s:1,%s:1" % (HOSTS[0], HOSTS[1])]
    for k, v in env.items():
        argv += ["-x", "%s=%s" % (k, v)]
    argv += [TORCH_PYTHON, os.path.join(ELASTIC_DIR, "train_elastic.py"), "--kill-worker", "1",
             "--kill-step", "2", "--cut-off-host"]
    rc, out, took = job.timed(job.cluster.hosts[0], argv, 120)
    expect(rc != 0, "hvdrun exited 0 with 1 worker left")
    expect("1 worker(s) left, fewer than --min-np 2" in out, "the error does not name --min-np")
    expect(took < 90, "the job took %.0f s to end" % took)
    expect("<stdout>: {" not in out, "a worker finished training")
    job.wait_no_leftovers()


def case_elastic_remove(job):
    """A host leaves an elastic job: the discovery script lists hostA, hostB and hostC (one
    slot each); at step 4 rank 0 drops hostC from its file. hvdrun stops hostC's worker (over
    ssh) once it leaves its round at the commit of step 6, and the workers on hostA and hostB
    finish as 2 ranks with the weights of the reference with that change at step 6."""
    with tempfile.TemporaryDirectory() as tmp:
        hosts, discover = discovery_files(tmp, HOSTS)
        out = elastic_run(job, ["--host-discovery-script", discover],
                          ["--hosts-file", hosts, "--remove-host", "hostC",
                           "--remove-step", "4"], {6: (2, False)}, (0, 1))
    expect("stopping worker 2: its host left the job" in out, "hvdrun did not stop worker 2")


RDV_PORT = 29400  # the hosts are fresh namespaces: nothing else listens there


def case_mpirun(job):
    """Open MPI's mpirun -H hostA:2,hostB:2,hostC:2 (its orted started over the same sshd),
    as a user runs it: no rendezvous address and no secret, so rank 0 hands its endpoint and
    a random secret to the others through mpirun's PMIx server, which every rank says."""
    if shutil.which("mpirun") is None:
        raise Skip("no mpirun (Debian: openmpi-bin)")
    argv = ["mpirun", "--allow-run-as-root", "-np", "6", "-H",
            ",".join("%s:2" % h for h in HOSTS), "--mca", "plm_rsh_args", "-i " + job.key]
    for k, v in dict(MP_ENV, HVD_LOG_LEVEL="debug").items():
        argv += ["-x", "%s=%s" % (k, v)]
    rc, out, _ = job.timed(job.cluster.hosts[0], argv + [job.program("mp_collectives")], 60)
    expect_met_through(job, "mpirun", rc, out, "PMIx")


def expect_met_through(job, launcher, rc, out, channel, daemons=()):
    """The launcher's job passed, rank 0 said once that it listens at hostA's address for a
    rendezvous through `channel`, and nothing but `daemons` is left running."""
    expect(rc == 0, "%s exited %d" % (launcher, rc))
    said = re.findall(r"rendezvous through %s: rank 0 listens at (\S+):" % channel, out)
    expect(said == [job.cluster.hosts[0].mgmt_addr],
           "rank 0 said it listens at %s, not once at "
           "hostA's address %s" % (said, job.cluster.hosts[0].mgmt_addr))
    job.wait_no_leftovers(daemons=daemons)


def case_hydra(job):
    """MPICH's mpiexec.hydra -hosts hostA:2,hostB:2,hostC:2 (its proxies started over the same
    sshd), as a user runs it: no rendezvous address, no secret and no job id, so rank 0 hands
    its endpoint and a random secret to the others through Hydra's PMI-1 server."""
    if shutil.which("mpiexec.hydra") is None:
        raise Skip("no mpiexec.hydra (Debian: mpich)")
    with tempfile.TemporaryDirectory() as tmp:
        ssh = os.path.join(tmp, "ssh")
        with open(ssh, "w") as f:
            f.write('#!/bin/sh\nexec ssh -i "%s" "$@"\n' % job.key)
        os.chmod(ssh, 0o755)
        argv = ["mpiexec.hydra", "-n", "6", "-hosts", ",".join("%s:2" % h for h in HOSTS),
                "-launcher", "ssh", "-launcher-exec", ssh]
        for k, v in dict(MP_ENV, HVD_LOG_LEVEL="debug").items():
            argv += ["-genv", k, v]
        rc, out, _ = job.timed(job.cluster.hosts[0], argv + [job.program("mp_collectives")], 60)
    expect_met_through(job, "mpiexec.hydra", rc, out, "PMI-1")


def case_slurm(job):
    """Ranks started in each host with the variables srun gives its tasks (SLURM_PROCID,
    SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, the step's nodes and reserved ports, ...) and
    HVD_SECRET only: rank 0's server is on the step's first node, at its first reserved port."""
    common = dict(os.environ, **MP_ENV, HVD_SECRET=secrets.token_hex(32), SLURM_JOB_ID="4242",
                  SLURM_STEP_ID="0", SLURM_NTASKS="6", SLURM_NNODES="3",
                  SLURM_STEP_NUM_NODES="3", SLURM_STEP_NODELIST=",".join(HOSTS),
                  SLURM_STEP_RESV_PORTS="%d-%d" % (RDV_PORT, RDV_PORT + 3))
    procs = []
    for node, h in enumerate(job.cluster.hosts):
        for local in range(2):
            env = dict(common, SLURM_PROCID=str(2 * node + local), SLURM_LOCALID=str(local),
                       SLURM_NODEID=str(node), SLURMD_NODENAME=h.name)
            procs.append(h.start([job.program("mp_collectives")], env=env))
    codes = [p.wait(timeout=60) for p in procs]
    expect(codes == [0] * 6, "rank exit codes %s" % codes)


SLURM_DAEMONS = ("slurmctld", "slurmd", "slurmscriptd", "slurmstepd", "munged")
# An outer launcher's variables (this test run itself under Slurm or mpirun) would reach the
# ranks or confuse srun.
OUTER_LAUNCHER_PREFIXES = ("SLURM_", "SLURMD_", "PMI_", "PMIX_", "OMPI_", "PRTE_", "HVD_",
                           "HOROVOD_")


def srun(job, options, command=None, env=None, timeout=40):
    """srun OPTIONS COMMAND (default: mp_collectives) on hostA against the cluster's own Slurm
    (slurm_hosts.py), 2 tasks per host; returns (exit code, output)."""
    slurm = start_slurm(job.cluster)
    argv = (["srun", "-N", str(len(HOSTS)), "-n", str(2 * len(HOSTS))] + list(options) +
            (command or [job.program("mp_collectives")]))
    base = {k: v for k, v in os.environ.items() if not k.startswith(OUTER_LAUNCHER_PREFIXES)}
    run_env = {**base, **MP_ENV, **slurm, "HVD_LOG_LEVEL": "debug", **(env or {})}
    rc, out, _ = job.timed(job.cluster.hosts[0], argv, timeout, run_env)
    return rc, out


def case_srun_pmix(job):
    """A real srun --mpi=pmix across the three hosts (slurmd in each): srun names no
    rendezvous address, so rank 0 hands its endpoint and a random secret to the others
    through Slurm's PMIx server."""
    rc, out = srun(job, ["--mpi=pmix"])
    expect_met_through(job, "srun --mpi=pmix", rc, out, "PMIx", SLURM_DAEMONS)


def case_srun_pmi2(job):
    """A real srun --mpi=pmi2: its plugin serves PMI-1's commands on PMI_FD, through which
    the ranks meet as under MPICH's mpiexec."""
    rc, out = srun(job, ["--mpi=pmi2"])
    expect_met_through(job, "srun --mpi=pmi2", rc, out, "PMI-1", SLURM_DAEMONS)


def case_srun_resv_ports(job):
    """A real srun without a PMI (--mpi=none) but with the ports Slurm reserves for the step
    (MpiParams=ports) and HVD_SECRET: rank 0 listens on the step's first node at the first
    reserved port, where the others look for it."""
    show = 'echo "task $SLURM_PROCID reserved ports $SLURM_STEP_RESV_PORTS"; exec "$@"'
    rc, out = srun(job, ["--mpi=none"],
                   ["sh", "-c", show, "sh", job.program("mp_collectives")],
                   env={"HVD_SECRET": secrets.token_hex(32)})
    expect(rc == 0, "srun exited %d" % rc)
    reserved = re.findall(r"task 0 reserved ports (\d+)", out)
    ports = re.findall(r"rendezvous server listening on (\S+):(\d+)", out)
    print("step's first reserved port: %s; rank 0's server: %s" % (reserved, ports))
    expect(len(reserved) == 1 and ports == [("hostA", reserved[0])],
           "rank 0's server did not listen once on hostA at the step's first reserved port")
    job.wait_no_leftovers(daemons=SLURM_DAEMONS)


def case_interfaces(job):
    """UCX's traffic between hosts goes over the interface chosen: HVD_IFACE, Horovod's
    HOROVOD_GLOO_IFACE, or UCX_NET_DEVICES (which wins over HVD_IFACE, with a warning)."""
    two = [(h, 2) for h in HOSTS[:2]]
    for env, busy, idle, warning in (
            ({"HVD_IFACE": "data0"}, "data0", "eth0", None),
            ({"HOROVOD_GLOO_IFACE": "eth0"}, "eth0", "data0", None),
            ({"UCX_NET_DEVICES": "data0", "HVD_IFACE": "eth0"}, "data0", "eth0",
             "UCX_NET_DEVICES=data0 wins over HVD_IFACE=eth0")):
        before = {i: job.link_bytes(i) for i in ("eth0", "data0")}
        rc, out, _ = job.hvdrun(two, "mp_collectives", env=env)
        sent = {i: job.link_bytes(i) - before[i] for i in before}
        print("bytes sent on eth0 %d, on data0 %d" % (sent["eth0"], sent["data0"]))
        expect(rc == 0, "hvdrun with %s exited %d" % (env, rc))
        # ssh, the rendezvous and the relayed output (tens of KB) stay on eth0; the
        # collectives' data (over 100 MB) must go where the settings say.
        expect(sent[busy] > 2_000_000, "with %s only %d bytes on %s" % (env, sent[busy], busy))
        expect(sent[idle] < 1_000_000, "with %s %d bytes on %s" % (env, sent[idle], idle))
        expect(warning is None or warning in out, "no warning '%s'" % warning)


def expect_unreachable_named(job, reason):
    """A job over data0 whose hostC cannot be reached there fails in hvd_init, within its
    timeout, with an error naming hostC's data0 address and interface and `reason`."""
    env = {"HVD_IFACE": "data0", "HVD_START_TIMEOUT": "8", "MP_RANKS_PER_HOST": "1"}
    rc, out, took = job.hvdrun([(h, 1) for h in HOSTS], "mp_collectives", env=env, timeout=40)
    expect(rc != 0, "the job passed without hostC's data link")
    expect(took < 25, "the job took %.1f s to fail" % took)
    c = r"rank 2 \(host hostC, 10\.232\.0\.3 on data0\)"
    a = r"rank 0 \(host hostA, 10\.232\.0\.1 on data0\)"
    expect(re.search(a + " cannot reach " + c + ": " + reason, out) or
           re.search(c + " cannot reach " + a + ": " + reason, out),
           "no error naming hostC's address and interface and '%s'" % reason)
    job.wait_no_leftovers()


def case_unreachable(job):
    """hostC's data link cut at the bridge: no carrier on its data0, which UCX reports."""
    job.cluster.hosts[2].link("data0", up=False)
    expect_unreachable_named(job, "the transport reports it unreachable")


def case_blackholed(job):
    """Everything to and from hostC's data0 dropped silently (a 100% loss): the reachability
    check of hvd_init gives up at its timeout."""
    job.cluster.hosts[2].blackhole("data0")
    expect_unreachable_named(job, r"no answer within hvd_init's 8\.0 s")


SINK = ("import socket, sys\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind((sys.argv[1], 7077)); s.listen(1); print('listening', flush=True)\n"
        "c, _ = s.accept(); n = 0\n"
        "while True:\n"
        "    b = c.recv(1 << 20)\n"
        "    if not b: break\n"
        "    n += len(b)\n"
        "print(n, flush=True)\n")
SOURCE = ("import socket, sys, time\n"
          "c = socket.create_connection((sys.argv[1], 7077)); t = time.monotonic()\n"
          "c.sendall(b'x' * int(sys.argv[2])); c.shutdown(socket.SHUT_WR); c.recv(1)\n"
          "print('%.3f' % (time.monotonic() - t), flush=True)\n")


def case_shaped(job):
    """The benchmarks' link shaping (Host.shape): tc netem, or its rate alone through tbf on a
    kernel without sch_netem, holds what a host sends on data0 to the rate: 4 MiB at 20 Mbit/s
    take 1.68 s, of which the transfer must take at least 0.8 (milliseconds unshaped). A loss
    (netem's, or a packet filter's) drops the fraction asked for; a kernel that can make
    neither skips that part, after the rate's check."""
    a, b = job.cluster.hosts[0], job.cluster.hosts[1]
    applied, why = a.shape("data0", "delay 50us rate 20mbit")
    print("applied: %r; not applied: %r" % (applied, why))
    expect(applied, "no shaping applied on %s: %s" % (a.name, why))
    shown = a.run(["tc", "qdisc", "show", "dev", "data0"]).stdout
    print(shown)
    expect(re.search(r"\b(netem|tbf)\b.*\brate 20Mbit", shown), "tc shows no 20 Mbit/s qdisc")
    size = 4 << 20
    sink = b.start([sys.executable, "-c", SINK, b.address("data0")], stdout=subprocess.PIPE,
                   text=True)
    expect(sink.stdout.readline().strip() == "listening", "the sink on %s did not start" % b.name)
    r = a.run([sys.executable, "-c", SOURCE, b.address("data0"), str(size)], timeout=30)
    print(r.stdout)
    expect(r.returncode == 0, "the transfer from %s failed" % a.name)
    received = int(sink.stdout.readline().strip() or 0)
    sink.wait(timeout=10)
    expect(received == size, "%s received %d of %d bytes" % (b.name, received, size))
    took = float(r.stdout.split()[-1])
    bound = size * 8 / 20e6
    expect(took >= 0.8 * bound, "4 MiB took %.3f s at 20 Mbit/s (at least %.2f s)" %
           (took, 0.8 * bound))
    expect_loss(a, b, 0.3)


DATAGRAM_SINK = ("import socket, sys\n"
                 "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                 "s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)\n"
                 "s.bind((sys.argv[1], 7078)); print('listening', flush=True)\n"
                 "n = 0\n"
                 "s.settimeout(20)  # until the source starts, then 2 s of silence ends it\n"
                 "try:\n"
                 "    while True:\n"
                 "        s.recv(64); n += 1; s.settimeout(2)\n"
                 "except socket.timeout:\n"
                 "    pass\n"
                 "print(n, flush=True)\n")
DATAGRAM_SOURCE = ("import socket, sys, time\n"
                   "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                   "for i in range(int(sys.argv[2])):\n"
                   "    s.sendto(b'x', (sys.argv[1], 7078)); time.sleep(0.0002)\n")


def apply_loss(host, netem):
    """Host.shape(netem) on host's data0, all of it; Skip where this kernel can drop no
    packets at random."""
    applied, why = host.shape("data0", netem)
    print("%s: applied: %r; not applied: %r" % (host.name, applied, why))
    if not applied:
        raise Skip("this kernel can drop no packets at random (%s)" % why)
    expect(not why, "the loss on %s was applied in part: %s" % (host.name, why))


def expect_loss(a, b, fraction):
    """Host.shape's loss drops that fraction of what a sends: of 2,000 datagrams to b (whose
    count dropped has a standard deviation of about 1 % of them), a's qdiscs drop within 0.1
    of it, and b receives at most the rest (give or take an ARP packet the filter drops too)."""
    apply_loss(a, "loss %g%%" % (fraction * 100))
    sink = b.start([sys.executable, "-c", DATAGRAM_SINK, b.address("data0")],
                   stdout=subprocess.PIPE, text=True)
    expect(sink.stdout.readline().strip() == "listening", "the sink on %s did not start" % b.name)
    before = dropped_packets(a, "data0")
    sent = 2000
    r = a.run([sys.executable, "-c", DATAGRAM_SOURCE, b.address("data0"), str(sent)],
              timeout=30)
    expect(r.returncode == 0, "sending from %s failed: %s" % (a.name, r.stdout))
    dropped = dropped_packets(a, "data0") - before
    received = int(sink.stdout.readline().strip() or 0)
    sink.wait(timeout=30)
    lost = dropped / sent
    print("%d of %d datagrams dropped (%.1f %%), %d received" % (dropped, sent, lost * 100,
                                                                 received))
    expect(abs(lost - fraction) <= 0.1, "%.1f %% of the datagrams were dropped, not %g %%" %
           (lost * 100, fraction * 100))
    expect(0 < received <= sent - dropped + 2, "%d datagrams received of %d sent, %d dropped" %
           (received, sent, dropped))


def dropped_packets(host, iface):
    """Packets the qdiscs of host's iface dropped, from `tc -s qdisc show`."""
    shown = host.run(["tc", "-s", "qdisc", "show", "dev", iface]).stdout
    return sum(int(n) for n in re.findall(r"\bdropped (\d+)", shown))


def case_lossy(job):
    """A lossy data network: every host drops 1 % of what it sends on data0, at random (tc
    netem's loss, or a packet filter where the kernel has no sch_netem). The collectives'
    values still check out on every rank across the three hosts, within the case's deadline,
    and the hosts' qdiscs show the packets they dropped."""
    for h in job.cluster.hosts:
        apply_loss(h, "loss 1%")
    rc, out, took = job.hvdrun([(h, 2) for h in HOSTS], "mp_collectives",
                               env={"HVD_IFACE": "data0"})
    expect(rc == 0, "hvdrun over the lossy links exited %d" % rc)
    dropped = {h.name: dropped_packets(h, "data0") for h in job.cluster.hosts}
    print("dropped on data0: %s" % dropped)
    expect(sum(dropped.values()) > 0, "no packet was dropped on data0")
    job.wait_no_leftovers()


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hvdrun", required=True, help="the hvdrun program")
    ap.add_argument("--programs", required=True, help="the directory of the mp programs")
    ap.add_argument("--python-path", default="", help="the hvd package's build directory")
    ap.add_argument("--deadline", type=float, default=100.0, help="seconds for the whole case")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    install_signal_teardown()
    signal_deadline(args.deadline)
    hosts = HOSTS
    try:
        with Cluster(hosts) as cluster:
            key = start_sshd(cluster)
            CASES[args.case](Job(cluster, key, args))
    except Skip as e:
        print("cluster_cases: skipped: %s" % e)
        return SKIP
    except Failed as e:
        print("cluster_cases: %s: FAILED: %s" % (args.case, e))
        return 1
    print("cluster_cases: %s ok" % args.case)
    return 0


def signal_deadline(seconds):
    """SIGALRM after `seconds` ends the case as a failure (tearing the cluster down)."""
    def handler(_signum, _frame):
        raise Failed("the case ran past its deadline of %.0f s" % seconds)
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)


if __name__ == "__main__":
    sys.exit(main())
