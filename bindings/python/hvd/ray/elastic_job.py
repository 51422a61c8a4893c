# SPDX-License-Identifier: Apache-2.0
"""One run() of an ElasticRayExecutor: hvdrun --elastic-controller keeps the membership
rounds (controller.py); this loop starts a Ray actor for each worker hvdrun asks for (on the
node address it names), runs worker_fn there, kills the actors of workers hvdrun stops (their
host is no longer offered), tells hvdrun how each ended, and sends the hosts Ray's nodes offer
while the job runs. Every wait is bounded: actors that Ray cannot start within timeout_s count
as failed, hvdrun bounds each round by elastic_timeout, and run_timeout_s (when set) bounds
the whole job."""

import logging
import time

import ray

from hvd.ray.controller import Hvdrun, StartRequest
from hvd.ray.worker import Worker

logger = logging.getLogger(__name__)

POLL_S = 0.05
EXIT_KILLED = 137  # a worker whose actor died: as a process killed by SIGKILL
EXIT_FAILED = 1


class ElasticJobError(RuntimeError):
    """An elastic job on Ray failed. reason: why (hvdrun's words when the job fell below
    min_np); errors: {worker id: exception} of the workers that failed."""

    def __init__(self, message, reason, errors):
        super().__init__(message)
        self.reason = reason
        self.errors = errors


class _Running:
    """A worker's actor: its call's ref, and until the actor answers, its start deadline."""

    def __init__(self, actor, ref, ready_ref, deadline):
        self.actor = actor
        self.ref = ref
        self.ready_ref = ready_ref
        self.deadline = deadline


class ElasticJob:
    def __init__(self, executor, worker_fn, callbacks):
        self.ex = executor
        self.settings = executor.settings
        self.fn = worker_fn
        self.callbacks = list(callbacks or [])
        self.running = {}  # worker id -> _Running
        self.results = {}  # worker id -> worker_fn's result
        self.errors = {}  # worker id -> exception
        self.stopping = set()  # workers hvdrun stopped: their ends are no failure
        self.failure = None
        self.hvdrun = None

    def _hvdrun_args(self, hosts, num_proc):
        s = self.settings
        args = ["-np", str(num_proc), "--min-np", str(s.min_np),
                "--elastic-timeout", "%g" % s.elastic_timeout,
                "-H", ",".join("%s:%d" % (h, n) for h, n in hosts.items()),
                "--rendezvous-addr", ray.util.get_node_ip_address()]
        if s.max_np is not None:
            args += ["--max-np", str(s.max_np)]
        return args

    def _start_actor(self, request):
        opts = dict(num_cpus=self.ex.cpus_per_slot,
                    resources={"node:%s" % request.host: 0.001})
        if self.ex.gpus_per_slot:
            opts["num_gpus"] = self.ex.gpus_per_slot
        actor = ray.remote(Worker).options(**opts).remote()
        ready = actor.node_info.remote()
        actor.set_env.remote(request.env, self.ex.worker_env())
        ref = actor.run.remote(self.fn, [], {})
        self.running[request.worker_id] = _Running(
            actor, ref, ready, time.monotonic() + self.settings.timeout_s)
        self.ex.workers[request.worker_id] = actor

    def _stop(self, worker_id):
        run = self.running.get(worker_id)
        if run is None:
            return  # it has ended; hvdrun has its exit
        logger.info("hvd.ray: stopping elastic worker %d: its host is no longer offered",
                    worker_id)
        self.stopping.add(worker_id)
        ray.kill(run.actor, no_restart=True)

    def _finish(self, worker_id, code, error=None, result=None):
        run = self.running.pop(worker_id)
        self.ex.workers.pop(worker_id, None)
        if worker_id in self.stopping:
            self.stopping.discard(worker_id)
        elif error is None:
            self.results[worker_id] = result
            for cb in self.callbacks:
                cb(result)
        else:
            self.errors[worker_id] = error
            logger.warning("hvd.ray: elastic worker %d failed (%s: %s); hvdrun decides whether "
                           "the job goes on without it", worker_id, type(error).__name__,
                           (str(error).strip().splitlines() or [""])[-1][:300])
            ray.kill(run.actor, no_restart=True)
        self.hvdrun.exited(worker_id, code)

    def _collect(self, timeout):
        refs = {r.ref: wid for wid, r in self.running.items()}
        if not refs:
            time.sleep(timeout)
            return
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        for ref in ready:
            wid = refs[ref]
            try:
                self._finish(wid, 0, result=ray.get(ref))
            except ray.exceptions.RayActorError as e:
                self._finish(wid, EXIT_KILLED, error=e)
            except Exception as e:  # noqa: BLE001 - worker_fn's failure, reported to hvdrun
                self._finish(wid, EXIT_FAILED, error=e)
        now = time.monotonic()
        for wid, r in list(self.running.items()):
            if r.ready_ref is None:
                continue
            if ray.wait([r.ready_ref], timeout=0)[0]:
                r.ready_ref = None
            elif now > r.deadline:
                self._finish(wid, EXIT_FAILED, error=TimeoutError(
                    "Ray did not start worker %d's actor within %g s (timeout_s)"
                    % (wid, self.settings.timeout_s)))

    def run(self, hosts, num_proc):
        s = self.settings
        self.hvdrun = Hvdrun(self._hvdrun_args(hosts, num_proc), verbose=bool(s.verbose))
        deadline = None if s.run_timeout_s is None else time.monotonic() + s.run_timeout_s
        next_discovery = time.monotonic() + s.discovery_interval_s
        code = None
        try:
            while code is None:
                while True:
                    try:
                        event = self.hvdrun.events.get_nowait()
                    except Exception:  # noqa: BLE001 - queue.Empty
                        break
                    if isinstance(event, StartRequest):
                        self._start_actor(event)
                    elif event[0] == "stop":
                        self._stop(event[1])
                    elif event[0] == "failed":
                        self.failure = event[1]
                    else:
                        code = event[1]
                if code is not None:
                    break
                self._collect(POLL_S)
                if time.monotonic() >= next_discovery:
                    next_discovery = time.monotonic() + s.discovery_interval_s
                    self.hvdrun.hosts(self.ex.discover())
                if deadline is not None and time.monotonic() > deadline:
                    self.failure = "the job did not finish within %g s (run_timeout_s)" \
                        % s.run_timeout_s
                    break
        finally:
            self.hvdrun.stop()
            for wid in list(self.running):
                ray.kill(self.running.pop(wid).actor, no_restart=True)
            self.ex.workers.clear()
        outcome = self._outcome(code)
        if isinstance(outcome, ElasticJobError):
            raise outcome
        return outcome

    def _outcome(self, code):
        if code == 0 and self.failure is None:
            _, order = self.hvdrun.last_round()
            ids = [w for w in order if w in self.results]
            ids += sorted(w for w in self.results if w not in ids)
            return [self.results[w] for w in ids]
        reason = self.failure or "hvdrun exited with code %s" % code
        parts = ["worker %d: %s: %s" % (w, type(e).__name__, str(e).strip().splitlines()[-1]
                                         if str(e).strip() else "")
                 for w, e in sorted(self.errors.items())]
        message = "hvd.ray: the elastic job failed: %s" % reason
        if parts:
            message += "; failed workers: " + "; ".join(p[:400] for p in parts)
        return ElasticJobError(message, reason, dict(self.errors))
