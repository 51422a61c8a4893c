# SPDX-License-Identifier: Apache-2.0
"""A cluster of "hosts" on one machine: network namespaces joined by veth pairs to bridges.

Every host is a network namespace with two links: eth0 on the management network (ssh, the
rendezvous) and data0 on the data network, each a veth pair whose outer end sits on a bridge
of its own. Neither bridge has an address in the machine's own namespace, so no traffic of
the cluster leaves its namespaces. Commands run in a host through `ip netns exec` (which
also mounts /etc/netns/<namespace>/ over /etc: the cluster's hosts file and ssh client
settings) and `unshare --uts`, so each host has its own hostname.

Names carry a random run id and the owner's pid (a state directory under STATE_ROOT), so
concurrent runs do not collide, and a run that was killed before its teardown is cleaned
up by the next one. Everything is torn down by Cluster.close() (also on exceptions and on
SIGTERM/SIGINT, see install_signal_teardown).
"""
import os
import re
import secrets
import shutil
import signal
import subprocess
import time

PREFIX = "hvc"  # every namespace, bridge and veth of a cluster starts with PREFIX + run id
STATE_ROOT = "/run/hvd-cluster"
ETC_NETNS = "/etc/netns"
MGMT_NET = "10.231.0"
DATA_NET = "10.232.0"
SKIP = 77  # ctest's SKIP_RETURN_CODE for the cluster tests


class Skip(Exception):
    """The machine cannot host a cluster (no root, no namespaces, a missing tool)."""


def sh(*argv, check=True, timeout=20, **kw):
    """Runs argv; raises RuntimeError with its output when check and it fails."""
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stdout.strip()))
    return r


def _namespaces():
    r = sh("ip", "netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _links():
    r = sh("ip", "-o", "link", "show", check=False)
    names = []
    for line in r.stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            names.append(parts[1].strip().split("@")[0])
    return names


def kill_namespace_processes(ns, sig=signal.SIGKILL):
    """Signals every process whose network namespace is ns (by pid, as `ip netns pids` lists)."""
    r = sh("ip", "netns", "pids", ns, check=False)
    pids = [int(p) for p in r.stdout.split() if p.isdigit()]
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return pids


def remove_run(run_id):
    """Removes every namespace, link and file of run run_id (its processes killed first)."""
    tag = PREFIX + run_id
    for ns in _namespaces():
        if ns.startswith(tag + "-"):
            for _ in range(50):
                if not kill_namespace_processes(ns):
                    break
                time.sleep(0.1)
            sh("ip", "netns", "del", ns, check=False)
            shutil.rmtree(os.path.join(ETC_NETNS, ns), ignore_errors=True)
    for link in _links():
        if link.startswith(tag):
            sh("ip", "link", "del", link, check=False)
    shutil.rmtree(os.path.join(STATE_ROOT, run_id), ignore_errors=True)


def remove_stale_runs():
    """Tears down runs whose owner process is gone (a test killed before its teardown)."""
    if not os.path.isdir(STATE_ROOT):
        return
    for run_id in os.listdir(STATE_ROOT):
        try:
            with open(os.path.join(STATE_ROOT, run_id, "owner")) as f:
                owner = int(f.read().strip())
        except (OSError, ValueError):
            owner = 0
        if owner == 0 or not os.path.exists("/proc/%d" % owner):
            remove_run(run_id)


def check_can_build():
    """Raises Skip, saying why, where this machine cannot make namespaces, veths or bridges."""
    if os.geteuid() != 0:
        raise Skip("needs root to create network namespaces (run as root, as CI does)")
    for tool in ("ip", "unshare", "hostname"):
        if shutil.which(tool) is None:
            raise Skip("'%s' is not installed (Debian: iproute2, util-linux)" % tool)
    probe = "%sp%s" % (PREFIX, secrets.token_hex(3))
    r = sh("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        raise Skip("cannot create a network namespace: %s" % r.stdout.strip())
    try:
        r = sh("ip", "netns", "exec", probe, "unshare", "--uts", "true", check=False)
        if r.returncode != 0:
            raise Skip("cannot create a UTS namespace: %s" % r.stdout.strip())
        r = sh("ip", "link", "add", probe + "v", "type", "veth", "peer", "name", "eth0",
               "netns", probe, check=False)
        if r.returncode != 0:
            raise Skip("cannot create a veth pair: %s" % r.stdout.strip())
    finally:
        sh("ip", "link", "del", probe + "v", check=False)
        sh("ip", "netns", "del", probe, check=False)


class Host:
    def __init__(self, cluster, index, name):
        self.cluster = cluster
        self.index = index
        self.name = name
        self.ns = "%s-%d" % (cluster.tag, index)
        self.mgmt_addr = "%s.%d" % (MGMT_NET, index + 1)
        self.data_addr = "%s.%d" % (DATA_NET, index + 1)
        self.outer = {"eth0": "%s%dm" % (cluster.tag, index), "data0": "%s%dd" % (cluster.tag, index)}

    def argv(self, command):
        """argv running command (a list) in this host: its namespaces and hostname."""
        return ["ip", "netns", "exec", self.ns, "unshare", "--uts", "--", "sh", "-c",
                'hostname "$0" && exec "$@"', self.name] + list(command)

    def run(self, command, timeout=60, env=None, check=False):
        return sh(*self.argv(command), check=check, timeout=timeout, env=env)

    def start(self, command, env=None, **kw):
        """Starts command in this host; the cluster kills it at teardown if still running."""
        p = subprocess.Popen(self.argv(command), env=env, start_new_session=True, **kw)
        self.cluster.processes.append(p)
        return p

    def link(self, iface, up):
        """Cuts (up=False) or restores this host's link iface at the bridge: inside the host the
        interface keeps its address but has no carrier."""
        sh("ip", "link", "set", self.outer[iface], "up" if up else "down")

    def blackhole(self, iface):
        """Drops everything to and from this host's iface: its veth leaves the bridge, so what
        the host sends ends at the outer end (up, without an address) and nothing reaches it,
        while both ends stay up. Every host knows every other's hardware address on iface, so
        no ARP failure gives the loss away: as with a 100% loss, only timeouts can tell."""
        sh("ip", "link", "set", "dev", self.outer[iface], "nomaster")
        for h in self.cluster.hosts:
            for other in self.cluster.hosts:
                if other is not h:
                    sh("ip", "netns", "exec", h.ns, "ip", "neigh", "replace",
                       other.address(iface), "lladdr", other.mac(iface), "dev", iface,
                       "nud", "permanent")

    def address(self, iface):
        return self.mgmt_addr if iface == "eth0" else self.data_addr

    def mac(self, iface):
        r = sh("ip", "netns", "exec", self.ns, "cat", "/sys/class/net/%s/address" % iface)
        return r.stdout.strip()

    def shape(self, iface, netem):
        """Shapes what this host sends on iface with tc netem (e.g. "delay 50us rate 10gbit").
        A kernel without sch_netem gets what it can make without it (without_netem): a rate
        through a token bucket filter, a random loss through a packet filter. Returns (what
        was applied: netem, the qdiscs made instead, or ""; why the rest was not: "" when all
        of it was)."""
        tc = ("ip", "netns", "exec", self.ns, "tc")
        r = sh(*tc, "qdisc", "replace", "dev", iface, "root", "netem", *netem.split(),
               check=False)
        if r.returncode == 0:
            return netem, ""
        why = "netem: " + r.stdout.strip()
        rate, loss, rest = without_netem(netem)
        if rate is None and loss is None:
            return "", why if rest else ""  # ("loss 0%": nothing was asked for)
        made = []
        if loss is not None:
            failed = self._apply(tc, iface, loss_steps(iface, loss, rate))
            if failed:
                why += "; " + failed
                rest = ["loss", "%g%%" % (loss * 100)] + rest
            else:
                made = ["htb with a random loss of %g%% (cls_bpf)" % (loss * 100)]
                made += ["tbf rate " + rate] if rate else []
        if not made and rate is not None:
            failed = self._apply(tc, iface, [rate_step(iface, rate, ("root",))])
            if failed:
                why += "; " + failed
            else:
                made = ["tbf rate " + rate]
        if not made:
            return "", why
        return ", ".join(made), (why + " (not applied: %s)" % " ".join(rest) if rest else "")

    @staticmethod
    def _apply(tc, iface, steps):
        """Runs the tc steps on iface's bare root; "" when all of them worked, else what
        failed (the root is bare again then)."""
        sh(*tc, "qdisc", "del", "dev", iface, "root", check=False)  # earlier shaping
        for step in steps:
            r = sh(*tc, *step, check=False)
            if r.returncode != 0:
                sh(*tc, "qdisc", "del", "dev", iface, "root", check=False)
                return "tc %s: %s" % (" ".join(step), r.stdout.strip())
        return ""


def rate_step(iface, rate, parent):
    """tc's arguments for a token bucket at `rate` under parent: the bucket holds 2 ms at the
    rate (at least 64 KiB, one GSO segment), and packets wait at most 2 ms more for tokens
    before the queue drops them."""
    burst = max(65536, int(rate_bits(rate) / 8 * 0.002))
    return ("qdisc", "add", "dev", iface, *parent, "tbf", "rate", rate, "burst", str(burst),
            "latency", "2ms")


def loss_steps(iface, loss, rate):
    """tc's arguments for a random loss of `loss` (a fraction) on iface, with the rate under
    it if one is given. An htb root classifies every packet with a classic BPF filter in
    direct-action mode, which drops that fraction of them at random (TC_ACT_SHOT) and leaves
    the others to the default class 1:10. A packet the classifier drops is reported to its
    sender as sent, as netem's loss is: TCP learns of it only from the missing
    acknowledgements. (A queue that refused it instead would tell the sender at once, and TCP
    would send it again on the next acknowledgement, without any loss recovery.) htb's own
    rate there is far above any veth's, with a burst of 1 MB so that GSO segments pass
    without waiting for tokens."""
    steps = [("qdisc", "add", "dev", iface, "root", "handle", "1:", "htb", "default", "10"),
             ("class", "add", "dev", iface, "parent", "1:", "classid", "1:10", "htb", "rate",
              "100gbit", "burst", "1mb", "cburst", "1mb", "quantum", "60000"),
             ("filter", "add", "dev", iface, "parent", "1:", "protocol", "all", "prio", "1",
              "bpf", "da", "bytecode", random_drop_bytecode(loss))]
    if rate is not None:
        steps.append(rate_step(iface, rate, ("parent", "1:10", "handle", "10:")))
    return steps


def without_netem(netem):
    """What of netem's words ("delay 50us rate 10gbit loss 1%") can be made without sch_netem:
    (the rate or None, the loss as a fraction or None, the words that cannot). The loss is a
    plain random one ("loss [random] P%"); a correlation or another loss model is left out, as
    is a rate in percent of the link's. Raises ValueError for a rate or loss tc would refuse."""
    words = netem.split()
    rate = loss = None
    rest = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == "rate" and i + 1 < len(words) and not words[i + 1].endswith("%"):
            rate = words[i + 1]
            rate_bits(rate)  # a ValueError names a rate tc would not take
            i += 2
            continue
        if w == "loss":
            j = i + 1 + (i + 1 < len(words) and words[i + 1] == "random")
            pct = words[j] if j < len(words) else ""
            correlated = j + 1 < len(words) and words[j + 1].endswith("%")
            if pct.endswith("%") and not correlated:
                loss = float(pct[:-1]) / 100.0
                if not 0.0 <= loss <= 1.0:
                    raise ValueError("loss %s: expected 0%% to 100%%" % pct)
                loss = loss or None  # no loss at all: nothing to make
                i = j + 1
                continue
        rest.append(w)
        i += 1
    return rate, loss, rest


TC_ACT_SHOT = 2
TC_ACT_UNSPEC = 0xFFFFFFFF  # -1: this filter has no verdict; the qdisc's default class


def random_drop_bytecode(fraction):
    """tc's classic BPF bytecode ("count,code jt jf k,...") of a direct-action filter that
    drops `fraction` of packets, drawn at random, and gives no verdict on the others:
    A = a random 32-bit number; A < threshold: drop. All of them from a fraction of 1."""
    drop = (0x06, 0, 0, TC_ACT_SHOT)  # ret #TC_ACT_SHOT
    if fraction >= 1.0:
        prog = (drop,)
    else:
        threshold = int(round(fraction * 2**32))
        ld_random = (0x20, 0, 0, 0xFFFFF038)  # ld [SKF_AD_OFF + SKF_AD_RANDOM]
        keep_unless_below = (0x35, 1, 0, threshold)  # jge #threshold: skip the drop
        no_verdict = (0x06, 0, 0, TC_ACT_UNSPEC)  # ret #-1
        prog = (ld_random, keep_unless_below, drop, no_verdict)
    return "%d,%s" % (len(prog), ",".join("%d %d %d %d" % insn for insn in prog))


# tc's rate units (iproute2's get_rate64), case aside: bits or bytes per second, SI or IEC.
_RATE_UNITS = {"bit": 1, "bps": 8}
for _prefix, _si, _iec in (("k", 10**3, 2**10), ("m", 10**6, 2**20), ("g", 10**9, 2**30),
                           ("t", 10**12, 2**40)):
    _RATE_UNITS[_prefix + "bit"] = _si
    _RATE_UNITS[_prefix + "ibit"] = _iec
    _RATE_UNITS[_prefix + "bps"] = 8 * _si
    _RATE_UNITS[_prefix + "ibps"] = 8 * _iec
_RATE = re.compile(r"^([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)([a-z]*)$")


def rate_bits(rate):
    """Bits per second of a tc rate: a number, alone (bits) or then one of tc's units (bit,
    kbit, kibit, ... tibit; bps, kbps, kibps, ... tibps), case aside ("10gbit", "125MBps")."""
    m = _RATE.match(rate.lower())
    if m and (m.group(2) == "" or m.group(2) in _RATE_UNITS):
        return float(m.group(1)) * _RATE_UNITS.get(m.group(2), 1)
    raise ValueError("rate %r: expected a number, alone or then bit, kbit, mbit, gbit, tbit, "
                     "bps, kbps, mbps, gbps, tbps (or kibit, kibps and the like)" % rate)


class Cluster:
    """N hosts named names[i], each with eth0 (MGMT_NET.i+1/24) and data0 (DATA_NET.i+1/24)."""

    def __init__(self, names):
        remove_stale_runs()
        check_can_build()
        self.run_id = secrets.token_hex(3)
        self.tag = PREFIX + self.run_id
        self.processes = []
        self.state = os.path.join(STATE_ROOT, self.run_id)
        os.makedirs(self.state, mode=0o700)
        with open(os.path.join(self.state, "owner"), "w") as f:
            f.write(str(os.getpid()))
        self.hosts = [Host(self, i, n) for i, n in enumerate(names)]
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self):
        bridges = {"eth0": self.tag + "bm", "data0": self.tag + "bd"}
        for br in bridges.values():
            sh("ip", "link", "add", br, "type", "bridge")
            sh("ip", "link", "set", br, "up")
        hosts_file = "127.0.0.1 localhost\n" + "".join(
            "%s %s\n" % (h.mgmt_addr, h.name) for h in self.hosts)
        for h in self.hosts:
            sh("ip", "netns", "add", h.ns)
            etc = os.path.join(ETC_NETNS, h.ns)
            os.makedirs(etc, exist_ok=True)
            with open(os.path.join(etc, "hosts"), "w") as f:
                f.write(hosts_file)
            sh("ip", "netns", "exec", h.ns, "ip", "link", "set", "lo", "up")
            for iface, net in (("eth0", MGMT_NET), ("data0", DATA_NET)):
                outer = h.outer[iface]
                sh("ip", "link", "add", outer, "type", "veth", "peer", "name", iface, "netns", h.ns)
                sh("ip", "link", "set", outer, "master", bridges[iface])
                sh("ip", "link", "set", outer, "up")
                sh("ip", "netns", "exec", h.ns, "ip", "addr", "add",
                   "%s.%d/24" % (net, h.index + 1), "dev", iface)
                sh("ip", "netns", "exec", h.ns, "ip", "link", "set", iface, "up")

    def etc_dir(self, host):
        """The directory mounted over /etc/<entry> for every entry in it, inside host."""
        return os.path.join(ETC_NETNS, host.ns)

    def close(self):
        for p in self.processes:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        remove_run(self.run_id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def install_signal_teardown():
    """Turns SIGTERM and SIGINT into SystemExit, so `with Cluster(...)` tears down on them."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
