#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Multi-host cases on a namespace cluster (netns_cluster.py) with real sshd (ssh_hosts.py).

    cluster_cases.py --hvdrun HVDRUN --programs DIR CASE

DIR holds the mp test programs. Exits 0 when the case passes, 77 (ctest's
skip) with the reason when this machine cannot build a cluster, 1 otherwise. Every case runs
under a deadline (--deadline seconds) and tears its cluster down however it ends.
"""
import argparse
import os
import re
import secrets
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from netns_cluster import SKIP, Cluster, Skip, install_signal_teardown  # noqa: E402
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

    def timed(self, host, argv, timeout):
        start = time.monotonic()
        r = host.run(argv, timeout=timeout)
        took = time.monotonic() - start
        print("$ %s\n%s(exit %d after %.1f s)" % (" ".join(argv), r.stdout, r.returncode, took))
        return r.returncode, r.stdout, took

    def processes(self, host):
        """(pid, command name) of every process running in host."""
        found = []
        for pid in os.popen("ip netns pids %s" % host.ns).read().split():
            try:
                with open("/proc/%s/comm" % pid) as f:
                    found.append((pid, f.read().strip()))
            except OSError:
                continue
        return found

    def running(self, host, comm):
        return any(c == comm for _, c in self.processes(host))

    def leftovers(self):
        """Processes still running in the hosts other than their sshd (none once a job ends)."""
        return ["%s: pid %s (%s)" % (h.name, pid, comm) for h in self.cluster.hosts
                for pid, comm in self.processes(h) if comm != "sshd"]

    def wait_no_leftovers(self, within=10.0):
        deadline = time.monotonic() + within
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.2)
        left = self.leftovers()
        expect(not left, "processes left on the hosts after the job: %s" % left)

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


def case_hvdrun_stopped(job):
    """hvdrun stopped by SIGTERM: its remote ranks end too (ssh itself forwards no signal)."""
    host = job.cluster.hosts[0]
    argv = [job.hvdrun_path, "-np", "3", "-H", ",".join("%s:1" % h for h in HOSTS),
            "--ssh-identity-file", job.key, "sleep", "600"]
    p = host.start(argv)
    deadline = time.monotonic() + 15
    started = lambda: all(job.running(h, "sleep") for h in job.cluster.hosts)
    while not started() and time.monotonic() < deadline:
        time.sleep(0.1)
    expect(started(), "the ranks did not start: %s" % job.leftovers())
    # hvdrun runs under `ip netns exec` and `unshare`, which exec it: p.pid is hvdrun.
    os.kill(p.pid, signal.SIGTERM)
    expect(p.wait(timeout=20) == 128 + signal.SIGTERM, "hvdrun exited %s" % p.returncode)
    job.wait_no_leftovers()


RDV_PORT = 29400  # the hosts are fresh namespaces: nothing else listens there


def launch_env(job):
    """What a job started by another launcher across hosts needs from libhvd's settings: rank
    0's host and a port for the rendezvous, and the job's secret."""
    return {"HVD_RENDEZVOUS_ADDR": HOSTS[0], "HVD_RENDEZVOUS_PORT": str(RDV_PORT),
            "HVD_SECRET": secrets.token_hex(32)}


def case_mpirun(job):
    """Open MPI's mpirun -H hostA:2,hostB:2,hostC:2 (its orted started over the same sshd)."""
    argv = ["mpirun", "--allow-run-as-root", "-np", "6", "-H",
            ",".join("%s:2" % h for h in HOSTS), "--mca", "plm_rsh_args", "-i " + job.key]
    for k, v in dict(MP_ENV, **launch_env(job)).items():
        argv += ["-x", "%s=%s" % (k, v)]
    rc, _, _ = job.timed(job.cluster.hosts[0], argv + [job.program("mp_collectives")], 60)
    expect(rc == 0, "mpirun exited %d" % rc)
    job.wait_no_leftovers()


def case_slurm(job):
    """Ranks started in each host with the variables srun gives its tasks (SLURM_PROCID,
    SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, ...) and the job's rendezvous settings."""
    common = dict(os.environ, **MP_ENV, **launch_env(job), SLURM_JOB_ID="4242",
                  SLURM_STEP_ID="0", SLURM_NTASKS="6", SLURM_NNODES="3")
    procs = []
    for node, h in enumerate(job.cluster.hosts):
        for local in range(2):
            env = dict(common, SLURM_PROCID=str(2 * node + local), SLURM_LOCALID=str(local),
                       SLURM_NODEID=str(node), SLURMD_NODENAME=h.name)
            procs.append(h.start([job.program("mp_collectives")], env=env))
    codes = [p.wait(timeout=60) for p in procs]
    expect(codes == [0] * 6, "rank exit codes %s" % codes)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hvdrun", required=True, help="the hvdrun program")
    ap.add_argument("--programs", required=True, help="the directory of the mp programs")
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
