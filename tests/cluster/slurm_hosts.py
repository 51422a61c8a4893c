# SPDX-License-Identifier: Apache-2.0
"""A real Slurm on the namespace hosts of a Cluster (netns_cluster.py): a private munged
(its own key and socket) for authentication, slurmctld in the first host and a slurmd in
every host, all configured by a slurm.conf in the cluster's state directory (SLURM_CONF),
so nothing of the machine's own Slurm is read or changed. srun then starts tasks on the
hosts as on a real cluster, with its PMIx, PMI-2 and reserved-port machinery."""

import os
import shutil
import subprocess
import time

from netns_cluster import Skip

NEEDED = ("munged", "slurmctld", "slurmd", "srun", "sinfo")

SLURM_CONF = """\
ClusterName=hvd{tag}
SlurmctldHost={first}({first_addr})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={state}/munge.socket
StateSaveLocation={state}/slurmctld
SlurmdSpoolDir={state}/slurmd-%n
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd-%n.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MpiParams=ports=12000-12999
ReturnToService=2
SlurmdParameters=config_overrides
{nodes}
PartitionName=hvd Nodes={names} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
"""

# `ip netns exec` gives a host a /sys of its own, without the cgroup file systems that slurmd
# checks at start: mounted again there (in the host's own mount namespace) as the machine has
# them, the unified hierarchy (cgroup v2) or one per v1 controller under a tmpfs.
MOUNT_CGROUPS = r"""
set -e
if mountpoint -q /sys/fs/cgroup; then :
elif [ -z "$(awk -F: '$2 != ""' /proc/self/cgroup)" ]; then
  mount -t cgroup2 cgroup2 /sys/fs/cgroup
else
  mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
  for c in $(awk -F: '$2 != "" {print $2}' /proc/self/cgroup); do
    mkdir -p "/sys/fs/cgroup/${c#name=}"
    mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/${c#name=}"
  done
fi
set +e
"""

# Slurm's PMIx plugin makes a directory per step under PMIxCliTmpDirBase, under the same name
# on every node: each host's slurmd mounts a directory of its own there, as separate machines
# have (only there: the program under test may live anywhere, /tmp included).
PRIVATE_PMIX_TMP = "mount -t tmpfs -o mode=1777 tmpfs \"$PMIX_TMP\"\n"

MPI_CONF = "PMIxCliTmpDirBase={pmix_tmp}\n"


def start_slurm(cluster, cpus_per_host=2, timeout=30.0):
    """Starts munged, slurmctld and the slurmds, and waits until every host is idle.
    Returns the environment srun needs (SLURM_CONF). Raises Skip where Slurm or munge is
    not installed (Debian: slurmctld, slurmd, slurm-client, munge)."""
    missing = [p for p in NEEDED if shutil.which(p) is None]
    if missing:
        raise Skip("%s not installed (Debian: slurmctld slurmd slurm-client munge)" %
                   ", ".join(missing))
    state = cluster.state
    os.makedirs(os.path.join(state, "slurmctld"), mode=0o700)
    pmix_tmp = os.path.join(state, "pmix-tmp")
    os.makedirs(pmix_tmp, mode=0o755)
    key = os.path.join(state, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(128))
    os.chmod(key, 0o600)
    first = cluster.hosts[0]
    # In the first host, so that the cluster's teardown stops it with the hosts; its socket is
    # a file every host reaches.
    munged = first.start(
        ["munged", "--foreground", "--force", "--key-file", key,
         "--socket", os.path.join(state, "munge.socket"),
         "--pid-file", os.path.join(state, "munged.pid"),
         "--log-file", os.path.join(state, "munged.log"),
         "--seed-file", os.path.join(state, "munged.seed")],
        stdout=_log(state, "munged"), stderr=subprocess.STDOUT)
    conf = os.path.join(state, "slurm.conf")
    with open(conf, "w") as f:
        f.write(SLURM_CONF.format(
            tag=cluster.run_id, first=first.name, first_addr=first.mgmt_addr, state=state,
            nodes="\n".join("NodeName=%s NodeAddr=%s CPUs=%d State=UNKNOWN" %
                            (h.name, h.mgmt_addr, cpus_per_host) for h in cluster.hosts),
            names=",".join(h.name for h in cluster.hosts)))
    with open(os.path.join(state, "mpi.conf"), "w") as f:
        f.write(MPI_CONF.format(pmix_tmp=pmix_tmp))
    env = dict(os.environ, SLURM_CONF=conf, PMIX_TMP=pmix_tmp)
    plugins = subprocess.run(["srun", "--mpi=list"], capture_output=True, text=True,
                             timeout=20, env=env)
    listed = plugins.stdout + plugins.stderr
    if "pmix" not in listed or "pmi2" not in listed:
        raise Skip("srun --mpi=list offers no pmix or pmi2 plugin: %s" % listed.strip())
    _wait_for_file(os.path.join(state, "munge.socket"), munged, timeout)
    daemons = [first.start(["slurmctld", "-D", "-i"], env=env,
                           stdout=_log(state, "slurmctld"), stderr=subprocess.STDOUT)]
    for h in cluster.hosts:
        os.makedirs(os.path.join(state, "slurmd-" + h.name), mode=0o700)
        daemons.append(h.start(
            ["sh", "-c", MOUNT_CGROUPS + PRIVATE_PMIX_TMP + 'exec "$@"', "sh", "slurmd", "-D",
             "-N", h.name],
            env=env, stdout=_log(state, "slurmd-" + h.name), stderr=subprocess.STDOUT))
    _wait_idle(first, env, len(cluster.hosts), state, daemons + [munged], timeout)
    return {"SLURM_CONF": conf}


def _log(state, name):
    """The file a daemon's own output goes to (its log file is apart); the daemon keeps it."""
    return open(os.path.join(state, name + ".out"), "w")


def _wait_for_file(path, process, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("munged did not start (exit %s); see %s" %
                               (process.poll(), os.path.dirname(path)))
        time.sleep(0.05)


def _wait_idle(host, env, count, state, daemons, timeout):
    """Waits until sinfo shows `count` idle nodes; fails at once, with the logs, where a daemon
    exited (a mount or a plugin refused), and after `timeout` s."""
    deadline = time.monotonic() + timeout
    states = ""
    while time.monotonic() < deadline:
        if any(d.poll() is not None for d in daemons):
            states = "a daemon exited"
            break
        try:
            r = host.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=10, env=env)
        except subprocess.TimeoutExpired:
            continue
        states = r.stdout.strip()
        idle = [line for line in states.splitlines() if line.split()[-1:] == ["idle"]]
        if r.returncode == 0 and len(idle) == count:
            return
        time.sleep(0.2)
    logs = []
    for name in sorted(os.listdir(state)):
        if name.endswith(".log") or name.endswith(".out"):
            with open(os.path.join(state, name)) as f:
                logs.append("--- %s\n%s" % (name, f.read()[-2000:]))
    raise RuntimeError("Slurm's nodes are not all idle: %s\n%s" % (states, "\n".join(logs)))
