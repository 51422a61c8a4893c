# SPDX-License-Identifier: Apache-2.0
"""Elastic jobs end to end: hvdrun --min-np/--max-np running train_elastic.py on this machine.

usage: test_elastic.py HVDRUN PYTHON CASE, CASE one of
  shrink     3 workers, worker 1 kills itself (SIGKILL) at step 5: the other two roll back to
             the commit of step 3, re-form as ranks 0 and 1 of 2 and finish; their weights
             equal the reference run with that change at that step.
  shrink_rank0
             the same with worker 0 (rank 0, host of the rendezvous server) killed: workers
             1 and 2 re-form as ranks 0 and 1.
  shrink_ssh the same with worker 2 on host fakehost, started through ssh (the stand-in
             tests/hvdrun/fake_ssh.sh, which runs the command here), killed: hvdrun learns
             of its death from ssh's exit.
  shrink_tf  shrink with train_elastic_tf.py (hvd.tensorflow.elastic) on PYTHON, the
             TensorFlow interpreter.
  below_min  2 workers with --min-np 2, one kills itself: hvdrun ends the job with an error
             naming --min-np, in bounded time.
  grow       2 workers on host localhost; at step 4 rank 0 adds host 127.0.0.1 to the
             discovery script's file and waits until hvdrun has started a worker there; the
             commit of step 6 raises HostsUpdatedInterrupt and the three re-form, the new
             worker receiving rank 0's state; all three end with the reference's weights.
  remove_host
             3 workers from the discovery lines "localhost" (--slots 2) and "127.0.0.1:1"; at
             step 4 rank 0 drops 127.0.0.1 from the file and waits until hvdrun has taken its
             worker out; the commit of step 6 raises HostsUpdatedInterrupt, hvdrun stops that
             worker (SIGTERM) and the other two finish as ranks 0 and 1 of 2 with the weights
             of the reference with that change at step 6, without a roll-back.
  below_min_recover
             2 workers with --min-np 2 and a discovery script; worker 1 kills itself at step 5;
             once hvdrun says it waits for slots, the test lists host 127.0.0.1, hvdrun starts
             a worker there and workers 0 and 2 finish with the 2-rank reference's weights.
  below_min_timeout
             the same with no host added and --elastic-timeout 4: hvdrun ends the job with an
             error naming --min-np, the live workers and the wait, after 4 s and in bounded
             time.
  blacklist_cooldown
             -np 2 --min-np 2 -H localhost:2 --blacklist-cooldown-range 1 2; worker 1 kills
             itself at step 5: hvdrun keeps localhost out for 1-3 s and waits, then starts
             worker 2 there, and workers 0 and 2 finish with the 2-rank reference's weights.
             Without the range the same job ends at once (below_min).
  reset_limit
             shrink with --reset-limit 0: hvdrun ends the job at the first change, saying so;
             with --reset-limit 1 the job finishes and the workers were given
             HOROVOD_ELASTIC_RESET_LIMIT=1.
Every run is bounded by RUN_TIMEOUT_S."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import elastic_model as m  # noqa: E402
from discovery import discovery_files  # noqa: E402

RUN_TIMEOUT_S = 150
BELOW_MIN_BOUND_S = 60
TOLERANCE = 1e-9
SCRIPT = os.path.join(HERE, "train_elastic.py")
TF_SCRIPT = os.path.join(HERE, "train_elastic_tf.py")


def run(hvdrun, python, flags, script_args, extra_env=None, script=SCRIPT, on_stderr=None):
    """Runs hvdrun to its end (at most RUN_TIMEOUT_S); on_stderr(line), when given, sees each
    line of its stderr as it comes. Returns its exit code, stderr, the workers' JSON results
    and the seconds it took."""
    cmd = [hvdrun] + flags + [python, script] + script_args
    env = dict(os.environ, HVD_START_TIMEOUT="60", HVD_OP_TIMEOUT="60",
               PYTHONDONTWRITEBYTECODE="1", **(extra_env or {}))
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    out, err = [], []

    def read(stream, into, watch):
        for line in stream:
            into.append(line)
            if watch is not None:
                watch(line)

    readers = [threading.Thread(target=read, args=(p.stdout, out, None)),
               threading.Thread(target=read, args=(p.stderr, err, on_stderr))]
    for t in readers:
        t.start()
    try:
        p.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for t in readers:
            t.join(timeout=10)
    elapsed = time.monotonic() - start
    stdout, stderr = "".join(out), "".join(err)
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    print("hvdrun exited %d after %.1f s" % (p.returncode, elapsed))
    results = []
    for line in stdout.splitlines():
        if "{" in line:
            results.append(json.loads(line[line.index("{"):]))
    return p.returncode, stderr, results, elapsed


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


def max_diff(a, b):
    return max(abs(float(u) - float(v)) for u, v in zip(a, b))


def check_weights(results, expected, others):
    for r in results:
        d = max_diff(r["weights"], expected)
        check(d <= TOLERANCE, "worker %d's weights equal the reference (max diff %.3g)"
              % (r["worker"], d))
    # The reference tells the membership histories apart, so the comparison above can fail.
    for name, other in others.items():
        check(max_diff(expected, other) > 1e-6,
              "the reference differs from a run with %s" % name)


def shrink(hvdrun, python, victim=1, flags=(), env=None, script=SCRIPT):
    rc, err, results, _ = run(hvdrun, python,
                              ["-np", "3", "--min-np", "2", "--max-np", "3"] + list(flags),
                              ["--kill-worker", str(victim), "--kill-step", "5"], env, script)
    survivors = [w for w in (0, 1, 2) if w != victim]
    check(rc == 0, "hvdrun exits 0 after losing a worker (got %d)" % rc)
    check("round 2: 2 rank(s), workers %d, %d" % tuple(survivors) in err,
          "round 2 re-forms with workers %d and %d" % tuple(survivors))
    check(sorted((r["worker"], r["rank"], r["size"]) for r in results) ==
          [(survivors[0], 0, 2), (survivors[1], 1, 2)],
          "workers %d and %d finish as ranks 0 and 1 of 2" % tuple(survivors))
    expected = m.reference(3, {5: (2, True)}).tolist()
    check_weights(results, expected, {
        "no change": m.reference(3, {}).tolist(),
        "no roll-back (2 ranks from step 5 on)": m.reference(3, {5: (2, False)}).tolist(),
        "the death after the next commit": m.reference(3, {7: (2, True)}).tolist()})
    return results


def shrink_rank0(hvdrun, python):
    shrink(hvdrun, python, victim=0)


def shrink_tf(hvdrun, python):
    shrink(hvdrun, python, script=TF_SCRIPT)


def shrink_ssh(hvdrun, python):
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "bin"))
        ssh = os.path.join(tmp, "bin", "ssh")
        shutil.copy(os.path.join(HERE, "..", "..", "hvdrun", "fake_ssh.sh"), ssh)
        os.chmod(ssh, 0o755)
        env = {"PATH": os.path.join(tmp, "bin") + os.pathsep + os.environ["PATH"]}
        # A remote worker gets only HVD_* and -x variables.
        flags = ["-H", "localhost:2,fakehost:1", "-x", "PYTHONPATH", "-x", "HVD_PY_BACKEND",
                 "-x", "HVD_START_TIMEOUT", "-x", "HVD_OP_TIMEOUT"]
        shrink(hvdrun, python, victim=2, flags=flags, env=env)


def below_min(hvdrun, python):
    rc, err, results, elapsed = run(hvdrun, python, ["-np", "2", "--min-np", "2"],
                                    ["--kill-worker", "1", "--kill-step", "2"])
    check(rc != 0, "hvdrun fails (exit %d)" % rc)
    check("1 worker(s) left, fewer than --min-np 2" in err, "the error names --min-np")
    check(elapsed < BELOW_MIN_BOUND_S, "it ends within %d s (%.1f s)" % (BELOW_MIN_BOUND_S,
                                                                          elapsed))
    check(not results, "no worker finishes training")


def grow(hvdrun, python):
    with tempfile.TemporaryDirectory() as tmp:
        hosts, discover = discovery_files(tmp, ["localhost:2"])
        rc, err, results, _ = run(
            hvdrun, python,
            ["-np", "2", "--min-np", "2", "--max-np", "3", "--host-discovery-script", discover],
            ["--hosts-file", hosts, "--add-host", "127.0.0.1:1", "--add-step", "4"])
    check(rc == 0, "hvdrun exits 0 (got %d)" % rc)
    check("round 2: 3 rank(s), workers 0, 1, 2" in err, "round 2 forms with the new worker")
    check(sorted((r["worker"], r["rank"], r["size"]) for r in results) ==
          [(0, 0, 3), (1, 1, 3), (2, 2, 3)], "the three finish as ranks 0-2 of 3")
    expected = m.reference(2, {6: (3, False)}).tolist()
    check_weights(results, expected, {
        "no change": m.reference(2, {}).tolist(),
        "the change at the previous commit": m.reference(2, {3: (3, False)}).tolist()})


def remove_host(hvdrun, python):
    with tempfile.TemporaryDirectory() as tmp:
        hosts, discover = discovery_files(tmp, ["localhost", "127.0.0.1:1"])
        rc, err, results, _ = run(
            hvdrun, python,
            ["-np", "3", "--min-np", "2", "--slots", "2", "--host-discovery-script", discover],
            ["--hosts-file", hosts, "--remove-host", "127.0.0.1:1", "--remove-step", "4"])
    check(rc == 0, "hvdrun exits 0 (got %d)" % rc)
    check("round 1: 3 rank(s), workers 0, 1, 2" in err,
          "--slots 2 gives localhost 2 workers, 127.0.0.1 its own 1")
    check("stopping worker 2: its host left the job" in err, "hvdrun stops worker 2")
    check("round 2: 2 rank(s), workers 0, 1" in err, "round 2 re-forms with workers 0 and 1")
    check(sorted((r["worker"], r["rank"], r["size"]) for r in results) == [(0, 0, 2), (1, 1, 2)],
          "workers 0 and 1 finish as ranks 0 and 1 of 2")
    expected = m.reference(3, {6: (2, False)}).tolist()
    check_weights(results, expected, {
        "no change": m.reference(3, {}).tolist(),
        "a death at step 4 (roll-back to step 3)": m.reference(3, {4: (2, True)}).tolist(),
        "the change at the previous commit": m.reference(3, {3: (2, False)}).tolist()})


def below_min_job(hvdrun, python, timeout_s, add_host):
    """-np 2 --min-np 2 on a discovery script listing localhost:2; worker 1 kills itself at
    step 5; with add_host, 127.0.0.1:1 is listed once hvdrun says it waits for slots."""
    with tempfile.TemporaryDirectory() as tmp:
        hosts, discover = discovery_files(tmp, ["localhost:2"])

        def on_stderr(line):
            if add_host and "waiting up to" in line:
                with open(hosts, "a") as f:
                    f.write("127.0.0.1:1\n")

        return run(hvdrun, python,
                   ["-np", "2", "--min-np", "2", "--host-discovery-script", discover,
                    "--elastic-timeout", str(timeout_s)],
                   ["--kill-worker", "1", "--kill-step", "5"], on_stderr=on_stderr)


def below_min_recover(hvdrun, python):
    rc, err, results, _ = below_min_job(hvdrun, python, 60, True)
    check(rc == 0, "hvdrun exits 0 (got %d)" % rc)
    check("1 worker(s) left, fewer than --min-np 2: waiting up to 60 s" in err,
          "hvdrun waits for discovered slots")
    check("round 2: 2 rank(s), workers 0, 2" in err, "round 2 forms with the new worker 2")
    check(sorted((r["worker"], r["rank"], r["size"]) for r in results) == [(0, 0, 2), (2, 1, 2)],
          "workers 0 and 2 finish as ranks 0 and 1 of 2")
    # Rolled back to step 3 and on with 2 ranks again: the weights of an unbroken 2-rank run,
    # which worker 2 has only if it received rank 0's state.
    check_weights(results, m.reference(2, {5: (2, True)}).tolist(), {})


def below_min_timeout(hvdrun, python):
    rc, err, results, elapsed = below_min_job(hvdrun, python, 4, False)
    check(rc != 0, "hvdrun fails (exit %d)" % rc)
    found = re.search(r"only 1 worker\(s\) live, fewer than --min-np 2, after waiting "
                      r"([0-9.]+) s \(--elastic-timeout 4\)", err)
    check(found is not None, "the error names --min-np, the live workers and the wait")
    check(4.0 <= float(found.group(1)) < 6.0, "it waited the timeout (%s s)" % found.group(1))
    check(elapsed < BELOW_MIN_BOUND_S, "it ends within %d s (%.1f s)" % (BELOW_MIN_BOUND_S,
                                                                          elapsed))
    check(not results, "no worker finishes training")


def blacklist_cooldown(hvdrun, python):
    rc, err, results, _ = run(
        hvdrun, python,
        ["-np", "2", "--min-np", "2", "-H", "localhost:2", "--blacklist-cooldown-range", "1", "2"],
        ["--kill-worker", "1", "--kill-step", "5"])
    check(rc == 0, "hvdrun exits 0 (got %d)" % rc)
    found = re.search(r"host localhost gets no workers for ([0-9.]+) s \(failure 1 there\)", err)
    check(found is not None and 1.0 <= float(found.group(1)) <= 2.0,
          "localhost is kept out for 1-2 s (%s)" % (found and found.group(1)))
    check("waiting up to 600 s (--elastic-timeout) for a failed host's cooldown to end" in err,
          "hvdrun waits for the cooldown below --min-np")
    check("host(s) localhost back from their cooldown: started 1 worker(s)" in err,
          "worker 2 starts on localhost after the cooldown")
    check("round 2: 2 rank(s), workers 0, 2" in err, "round 2 forms with the new worker 2")
    check(sorted((r["worker"], r["rank"], r["size"]) for r in results) == [(0, 0, 2), (2, 1, 2)],
          "workers 0 and 2 finish as ranks 0 and 1 of 2")
    check_weights(results, m.reference(2, {5: (2, True)}).tolist(), {})


def reset_limit(hvdrun, python):
    rc, err, results, elapsed = run(
        hvdrun, python, ["-np", "3", "--min-np", "2", "--reset-limit", "0"],
        ["--kill-worker", "1", "--kill-step", "5"])
    check(rc != 0, "hvdrun fails with --reset-limit 0 (exit %d)" % rc)
    check("the membership changed 1 time(s), more than --reset-limit 0" in err,
          "the error names --reset-limit")
    check("round 2:" not in err, "no second round forms")
    check(elapsed < BELOW_MIN_BOUND_S, "it ends within %d s (%.1f s)" % (BELOW_MIN_BOUND_S,
                                                                          elapsed))
    check(not results, "no worker finishes training")
    results = shrink(hvdrun, python, flags=["--reset-limit", "1"])
    check([r["reset_limit"] for r in results] == ["1", "1"],
          "the workers got HOROVOD_ELASTIC_RESET_LIMIT=1")


def main():
    hvdrun, python, case = sys.argv[1:4]
    cases = {"shrink": shrink, "shrink_rank0": shrink_rank0, "shrink_ssh": shrink_ssh,
             "shrink_tf": shrink_tf,
             "below_min": below_min, "grow": grow, "remove_host": remove_host,
             "below_min_recover": below_min_recover, "below_min_timeout": below_min_timeout,
             "reset_limit": reset_limit, "blacklist_cooldown": blacklist_cooldown}
    cases[case](hvdrun, python)


if __name__ == "__main__":
    main()
