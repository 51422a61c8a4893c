#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Chaos runs: short jobs of mixed collectives in which one process is harmed at a random
moment, and a check that nothing hangs and nothing is left behind.

Each run starts `hvdrun -np N chaos_worker` (N = 2..4; tests/chaos/chaos_worker.c checks every
result against its own reference), waits until every rank is up, sleeps a random 0.1-2 s and
then does one of:
  kill      SIGKILL a random rank: every survivor's op must fail within --detect-limit s;
  stop      SIGSTOP a random rank (a peer that stops answering without dying): every survivor
            must fail within the op timeout (--op-timeout) plus --detect-limit; the stopped
            rank is then killed;
  launcher  SIGKILL hvdrun itself: every rank must be gone within --detect-limit s.
Afterwards no process of the run may be left. A result that differs from the reference, a
survivor that finishes as if nothing happened, a hang or a leftover process fails the run.

  scripts/chaos.py [--runs 100] [--seed S] [--build DIR] [--faults kill,stop,launcher]
Exit status 0 when every run passed; the summary table is printed either way."""

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is gone for our purposes (its parent has not reaped it yet)
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class Run:
    def __init__(self, args, index, rng):
        self.args = args
        self.index = index
        self.np = rng.randint(2, 4)
        self.fault = rng.choice(args.faults)
        self.victim = rng.randrange(self.np)
        self.delay = rng.uniform(0.1, 2.0)
        self.seed = rng.randrange(1 << 62)
        self.dir = tempfile.mkdtemp(prefix="hvd-chaos-")
        self.failures = []
        self.detect_ms = []

    def fail(self, what):
        self.failures.append(what)

    def pids(self):
        out = {}
        for r in range(self.np):
            text = read(os.path.join(self.dir, "rank-%d.pid" % r))
            if text:
                out[r] = int(text)
        return out

    def result(self, r):
        return read(os.path.join(self.dir, "rank-%d.result" % r))

    def execute(self):
        env = dict(os.environ, HVD_OP_TIMEOUT=str(self.args.op_timeout))
        cmd = [self.args.hvdrun, "-np", str(self.np), "--grace-seconds", "600",
               self.args.worker, self.dir, str(self.seed), "30"]
        log = open(os.path.join(self.dir, "job.log"), "w")
        job = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        try:
            self.harm_and_watch(job)
        finally:
            self.clean_up(job)
            log.close()
        if self.failures and self.args.keep:
            print("run %d: kept %s" % (self.index, self.dir))
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def harm_and_watch(self, job):
        deadline = time.time() + 60
        while len(self.pids()) < self.np:
            if job.poll() is not None or time.time() > deadline:
                self.fail("the job did not start (hvdrun exit %s): %s" % (
                    job.poll(), (read(os.path.join(self.dir, "job.log")) or "")[-400:]))
                return
            time.sleep(0.02)
        time.sleep(self.delay)
        pids = self.pids()
        for r in range(self.np):
            if self.result(r) is not None:
                self.fail("rank %d ended before the fault: %s" % (r, self.result(r)))
                return
        t_fault = time.time() * 1e3
        if self.fault == "launcher":
            job.send_signal(signal.SIGKILL)
            self.watch_ranks_gone(pids, t_fault, self.args.detect_limit)
            return
        os.kill(pids[self.victim], signal.SIGKILL if self.fault == "kill" else signal.SIGSTOP)
        limit = self.args.detect_limit + (self.args.op_timeout if self.fault == "stop" else 0)
        self.watch_survivors(t_fault, limit)
        if self.fault == "stop":
            os.kill(pids[self.victim], signal.SIGKILL)
        try:
            job.wait(timeout=self.args.detect_limit)
        except subprocess.TimeoutExpired:
            self.fail("hvdrun still running %d s after the survivors ended"
                      % self.args.detect_limit)

    def watch_survivors(self, t_fault, limit_s):
        survivors = [r for r in range(self.np) if r != self.victim]
        pending = set(survivors)
        while pending and time.time() * 1e3 < t_fault + limit_s * 1e3:
            for r in list(pending):
                text = self.result(r)
                if text is None:
                    continue
                pending.discard(r)
                words = text.split()
                if words[0] == "error":
                    self.detect_ms.append(float(words[3]) - t_fault)
                elif words[0] == "done":
                    self.fail("rank %d finished every op although rank %d was harmed"
                              % (r, self.victim))
                else:
                    self.fail("rank %d: %s" % (r, text))
            time.sleep(0.02)
        for r in sorted(pending):
            self.fail("HANG: rank %d had not returned an error %.0f s after the fault"
                      % (r, limit_s))

    def watch_ranks_gone(self, pids, t_fault, limit_s):
        while time.time() * 1e3 < t_fault + limit_s * 1e3:
            if not any(alive(p) for p in pids.values()):
                self.detect_ms.append(time.time() * 1e3 - t_fault)
                return
            time.sleep(0.02)
        left = [r for r, p in pids.items() if alive(p)]
        self.fail("HANG: ranks %s still running %.0f s after hvdrun was killed" % (left, limit_s))

    def clean_up(self, job):
        """Kills whatever is left, after noting it as a failure."""
        time.sleep(0.2)
        left = [(r, p) for r, p in self.pids().items() if alive(p)]
        if left:
            # A stopped victim killed just now may take a moment to be reaped.
            time.sleep(1.0)
            left = [(r, p) for r, p in left if alive(p)]
        if left:
            self.fail("LEFTOVER: ranks %s still running at the end" % [r for r, _ in left])
            for _, p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if job.poll() is None:
            try:
                os.killpg(job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            job.wait()


def find_binary(build, name):
    for sub in ("tools/hvdrun", "tests", "."):
        path = os.path.join(build, sub, name)
        if os.access(path, os.X_OK):
            return path
    sys.exit("chaos.py: %s not found under %s (build the project first)" % (name, build))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--faults", default="kill,stop,launcher")
    parser.add_argument("--op-timeout", type=int, default=5,
                        help="HVD_OP_TIMEOUT for the jobs, in seconds")
    parser.add_argument("--detect-limit", type=float, default=10.0,
                        help="seconds a survivor may take to fail after a peer died")
    parser.add_argument("--keep", action="store_true", help="keep the files of failed runs")
    args = parser.parse_args()
    args.faults = args.faults.split(",")
    for f in args.faults:
        if f not in ("kill", "stop", "launcher"):
            parser.error("unknown fault %r" % f)
    args.hvdrun = find_binary(args.build, "hvdrun")
    args.worker = find_binary(args.build, "chaos_worker")
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    print("chaos: %d runs, seed %d (--seed %d repeats them)" % (args.runs, seed, seed))
    rng = random.Random(seed)

    by_fault = {}
    failed = 0
    t0 = time.time()
    for i in range(args.runs):
        run = Run(args, i, rng)
        run.execute()
        stats = by_fault.setdefault(run.fault, {"runs": 0, "failed": 0, "hangs": 0,
                                                "detect": []})
        stats["runs"] += 1
        stats["detect"].extend(run.detect_ms)
        if run.failures:
            failed += 1
            stats["failed"] += 1
            stats["hangs"] += sum(1 for f in run.failures if f.startswith("HANG"))
            for f in run.failures:
                print("run %d (np %d, %s rank %d after %.2f s): %s"
                      % (i, run.np, run.fault, run.victim, run.delay, f))
    print("\n| fault | runs | failed | hangs | detection median ms | worst ms |")
    print("|---|---|---|---|---|---|")
    for fault, s in sorted(by_fault.items()):
        d = s["detect"]
        print("| %s | %d | %d | %d | %s | %s |" % (
            fault, s["runs"], s["failed"], s["hangs"],
            "%.0f" % statistics.median(d) if d else "-", "%.0f" % max(d) if d else "-"))
    print("\nchaos: %d of %d runs failed (%.0f s; op timeout %d s)"
          % (failed, args.runs, time.time() - t0, args.op_timeout))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
