# SPDX-License-Identifier: Apache-2.0
"""Real OpenSSH between the hosts of a Cluster: an sshd in every host, keys made for the run.

Every host gets its own ed25519 host key and an sshd listening on its eth0 address; one
client key (Cluster.state/client_key) is authorised for root on all of them. Inside the
hosts, /etc/ssh is the run's own directory (through /etc/netns/<namespace>/ssh): an
ssh_config that checks host keys strictly against an ssh_known_hosts listing every host by
name and address, so ssh connects without prompting and without reading or writing the
machine's known_hosts files.
"""
import os
import time

from netns_cluster import Skip, sh

SSHD = "/usr/sbin/sshd"

SSHD_CONFIG = """\
ListenAddress {addr}
Port 22
HostKey {host_key}
PidFile none
AuthorizedKeysFile {authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
"""

SSH_CONFIG = """\
Host *
    StrictHostKeyChecking yes
    GlobalKnownHostsFile /etc/ssh/ssh_known_hosts
    UserKnownHostsFile /dev/null
    LogLevel ERROR
"""


def _keygen(path, comment):
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path)
    with open(path + ".pub") as f:
        return " ".join(f.read().split()[:2])


def start_sshd(cluster, timeout=15.0):
    """Starts an sshd in every host of cluster and waits until each accepts the client key
    from the first host. Returns the client key's path. Raises Skip without openssh-server."""
    if not os.access(SSHD, os.X_OK):
        raise Skip("%s is missing (Debian: openssh-server; scripts/common.sh installs it)" % SSHD)
    # sshd refuses to start without its privilege separation directory (the package's
    # service makes it at boot).
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    state = cluster.state
    client_key = os.path.join(state, "client_key")
    authorized = os.path.join(state, "authorized_keys")
    with open(authorized, "w") as f:
        f.write(_keygen(client_key, "hvd-cluster-client") + "\n")
    known = []
    for h in cluster.hosts:
        host_key = os.path.join(state, "host_key_%s" % h.name)
        public = _keygen(host_key, "hvd-cluster-" + h.name)
        names = sorted({h.name, h.name.lower(), h.mgmt_addr})
        known.append("%s %s\n" % (",".join(names), public))
        config = os.path.join(state, "sshd_config_%s" % h.name)
        with open(config, "w") as f:
            f.write(SSHD_CONFIG.format(addr=h.mgmt_addr, host_key=host_key,
                                       authorized_keys=authorized))
        log = open(os.path.join(state, "sshd_%s.log" % h.name), "w")
        h.start([SSHD, "-D", "-e", "-f", config], stdout=log, stderr=log)
    for h in cluster.hosts:
        etc_ssh = os.path.join(cluster.etc_dir(h), "ssh")
        os.makedirs(etc_ssh, exist_ok=True)
        with open(os.path.join(etc_ssh, "ssh_config"), "w") as f:
            f.write(SSH_CONFIG)
        with open(os.path.join(etc_ssh, "ssh_known_hosts"), "w") as f:
            f.writelines(known)
    _wait_reachable(cluster, client_key, timeout)
    return client_key


def _wait_reachable(cluster, client_key, timeout):
    first = cluster.hosts[0]
    deadline = time.monotonic() + timeout
    for h in cluster.hosts:
        while True:
            r = first.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-i",
                           client_key, h.name, "hostname"], timeout=10)
            if r.returncode == 0 and r.stdout.strip() == h.name:
                break
            if time.monotonic() > deadline:
                log = os.path.join(cluster.state, "sshd_%s.log" % h.name)
                with open(log) as f:
                    detail = f.read().strip()
                raise RuntimeError("ssh from %s to %s: exit %d: %s\nsshd log: %s" %
                                   (first.name, h.name, r.returncode, r.stdout.strip(), detail))
            time.sleep(0.2)
