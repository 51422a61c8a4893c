# SPDX-License-Identifier: Apache-2.0
"""Waiting for one call on every worker: results in rank order, within a bound, and a clear
error naming each rank that failed and how when one does."""

import time

import ray

# After the first failure, how long the other ranks get to report theirs (a peer's death
# fails their collectives at once; a rank still joining the job waits for its start timeout).
FAILURE_GRACE_S = 10.0


class WorkerError(RuntimeError):
    """A run/execute failed on one or more ranks.

    errors: {rank: exception} for each rank that failed (Ray's RayActorError for a worker
    whose actor died, the function's exception otherwise); dead_ranks: the ranks whose
    actors died; unfinished: ranks that had neither finished nor failed when this was raised;
    shut_down: whether the executor shut its workers down (a worker died, or ranks were left
    running): start() it again to run more."""

    def __init__(self, message, errors, dead_ranks, unfinished, shut_down):
        super().__init__(message)
        self.errors = errors
        self.dead_ranks = dead_ranks
        self.unfinished = unfinished
        self.shut_down = shut_down


def _summary(exc):
    """One line about a worker's exception: the function's own exception when Ray wrapped it."""
    if isinstance(exc, ray.exceptions.RayActorError):
        return "its worker actor died (%s)" % str(exc).strip().splitlines()[0][:300]
    cause = getattr(exc, "cause", None) or exc
    lines = str(cause).strip().splitlines()
    text = lines[-1] if isinstance(cause, ray.exceptions.RayError) and lines else \
        (lines[0] if lines else "")
    return "%s: %s" % (type(cause).__name__, text[:300])


class Waiter:
    """Waits for refs[r] (rank r's call) of every rank."""

    def __init__(self, refs, what, describe_rank):
        self.refs = list(refs)
        self.what = what
        self.describe_rank = describe_rank  # rank -> "rank 1 (node ..., pid ...)"
        self.results = [None] * len(self.refs)
        self.errors = {}
        self.pending = {ref: rank for rank, ref in enumerate(self.refs)}
        self.unfinished = []

    def wait(self, timeout_s):
        """Takes results and errors as they come until every rank has answered, timeout_s
        passed (None: no bound) or FAILURE_GRACE_S passed since the first failure. Then
        results holds the answers in rank order, errors the failures ({rank: exception}),
        unfinished the ranks that had not answered."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self.pending:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            ready, _ = ray.wait(list(self.pending), num_returns=1, timeout=remaining)
            for ref in ready:
                rank = self.pending.pop(ref)
                try:
                    self.results[rank] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    if not self.errors:
                        grace = time.monotonic() + FAILURE_GRACE_S
                        deadline = grace if deadline is None else min(deadline, grace)
                    self.errors[rank] = e
        self.unfinished = sorted(self.pending.values())

    def timeout_error(self, timeout_s):
        return TimeoutError("hvd.ray: %s did not finish within %g s (run_timeout_s); ranks "
                            "still running: %s; the executor shut its workers down: call "
                            "start() again to run more" % (self.what, timeout_s, self.unfinished))

    def dead_ranks(self):
        return sorted(r for r, e in self.errors.items()
                      if isinstance(e, ray.exceptions.RayActorError))

    def error(self, shut_down):
        """The WorkerError for the failures seen: dead workers first, then the others."""
        dead = self.dead_ranks()
        order = dead + sorted(r for r in self.errors if r not in dead)
        parts = ["%s: %s" % (self.describe_rank(r), _summary(self.errors[r])) for r in order]
        if self.unfinished:
            parts.append("still running: ranks %s" % self.unfinished)
        tail = ("; the executor shut its workers down: call start() again to run more"
                if shut_down else "")
        message = "hvd.ray: %s failed on %d of %d rank(s): %s%s" % (
            self.what, len(self.errors), len(self.refs), "; ".join(parts), tail)
        return WorkerError(message, dict(self.errors), dead, list(self.unfinished), shut_down)
