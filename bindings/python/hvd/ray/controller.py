# SPDX-License-Identifier: Apache-2.0
"""hvdrun --elastic-controller as a subprocess of the driver: libhvd's membership service and
its rounds, with the driver starting the workers. The line protocol is hvdrun's
(tools/hvdrun/controller_protocol.h): hvdrun asks for workers ("start <id> <host> VAR=VALUE
..."), asks to stop those of hosts no longer offered ("stop <id>") and says when the job
cannot go on ("failed <reason>"); the driver reports workers' ends ("exited <id> <code>") and
the hosts ("hosts <host>:<slots> ..."). hvdrun's own messages (its rounds among them) are
relayed to the driver's stderr."""

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections import namedtuple
from urllib.parse import quote, unquote

# A worker hvdrun asks for: its id, host (a node address) and variables.
StartRequest = namedtuple("StartRequest", ["worker_id", "host", "env"])

_ROUND = re.compile(r"^hvdrun: round (\d+): \d+ rank\(s\), workers ([\d, ]+) in rank order")
_SAFE = "!\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~"  # everything printable but '%' and ' '


def find_hvdrun():
    """The hvdrun to run: HVD_HVDRUN, else the one built or installed with this package, else
    hvdrun on PATH. Raises FileNotFoundError naming the places tried."""
    explicit = os.environ.get("HVD_HVDRUN")
    if explicit:
        return explicit
    try:
        from hvd import _build_config
        recorded = getattr(_build_config, "HVDRUN_PATH", "")
    except ImportError:
        recorded = ""
    if recorded and os.access(recorded, os.X_OK):
        return recorded
    found = shutil.which("hvdrun")
    if found:
        return found
    raise FileNotFoundError("hvd.ray: elastic jobs need hvdrun (libhvd's membership service): "
                            "not at %r, not on PATH; set HVD_HVDRUN" % (recorded or None,))


def encode(text):
    return quote(str(text), safe=_SAFE)


class Hvdrun:
    """One running hvdrun --elastic-controller. Lines from it arrive on self.events as
    StartRequest, ("stop", worker id), ("failed", reason) or ("exit", returncode) last."""

    def __init__(self, args, verbose=True):
        self.events = queue.Queue()
        self.rounds = []  # (round, [worker ids in rank order]) as hvdrun forms them
        self._verbose = verbose
        self._proc = subprocess.Popen([find_hvdrun(), "--elastic-controller"] + list(args),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, bufsize=1)
        self._lock = threading.Lock()
        self._err_done = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stdout(self):
        for line in self._proc.stdout:
            words = line.rstrip("\n").split(" ")
            if words[0] == "start" and len(words) >= 3:
                env = dict(unquote(w).split("=", 1) for w in words[3:] if "=" in w)
                self.events.put(StartRequest(int(words[1]), unquote(words[2]), env))
            elif words[0] == "stop" and len(words) == 2 and words[1].isdigit():
                self.events.put(("stop", int(words[1])))
            elif words[0] == "failed":
                self.events.put(("failed", line.rstrip("\n")[len("failed "):]))
        code = self._proc.wait()
        self._err_done.wait(5)  # its last rounds and messages first
        self.events.put(("exit", code))

    def _read_stderr(self):
        for line in self._proc.stderr:
            m = _ROUND.match(line)
            if m:
                ids = [int(w) for w in m.group(2).replace(",", " ").split()]
                with self._lock:
                    self.rounds.append((int(m.group(1)), ids))
            if self._verbose:
                sys.stderr.write(line)
        self._err_done.set()

    def last_round(self):
        with self._lock:
            return self.rounds[-1] if self.rounds else (0, [])

    def _send(self, line):
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # hvdrun has ended; its exit event says how

    def exited(self, worker_id, code):
        self._send("exited %d %d" % (worker_id, code))

    def hosts(self, hosts):
        self._send("hosts " + " ".join("%s:%d" % (encode(h), s) for h, s in hosts.items()))

    def stop(self, timeout_s=5):
        """Ends hvdrun: end of input, then SIGKILL after timeout_s."""
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=timeout_s)
