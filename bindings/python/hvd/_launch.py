# SPDX-License-Identifier: Apache-2.0
"""What a driver that starts workers itself (hvd.ray, hvd.spark) hands each worker so that
``hvd.init()`` there joins one job: the variables hvdrun gives a rank (rank and size, local
and cross ranks, the host's name, the rendezvous address and port on rank 0's host, the job's
secret and id), so the library's own authenticated rendezvous runs as under hvdrun.

Driver side: ``new_job()`` once per job, ``placement(hosts)`` from each rank's host, and
``worker_env(...)`` per rank. Rank 0's side: ``ReservedPort(addr)`` holds a free port until
rank 0's rendezvous server binds it (another job cannot take it meanwhile). Worker side:
``apply_env(env)`` before ``hvd.init()``.
"""

import os
import secrets
import socket
from collections import namedtuple

# Every variable worker_env sets; apply_env removes those a worker inherited and a new job
# does not set, so nothing of an earlier job is left behind.
JOB_VARIABLES = ("HVD_RANK", "HVD_SIZE", "HVD_LOCAL_RANK", "HVD_LOCAL_SIZE", "HVD_CROSS_RANK",
                 "HVD_CROSS_SIZE", "HVD_HOSTNAME", "HVD_RENDEZVOUS_ADDR", "HVD_RENDEZVOUS_PORT",
                 "HVD_SECRET", "HVD_JOB_ID")

Job = namedtuple("Job", ["secret", "job_id"])
Place = namedtuple("Place", ["local_rank", "local_size", "cross_rank", "cross_size"])


def new_job():
    """A fresh random secret (64 hex digits) and job id (16 hex digits), as hvdrun makes."""
    return Job(secrets.token_hex(32), secrets.token_hex(8))


def placement(hosts):
    """Local and cross ranks of ranks 0..N-1 from each rank's host (any hashable value that
    equals for ranks on one host), with Horovod's meaning: local rank = order among the ranks
    of one host; cross rank = order among the ranks with the same local rank."""
    local_rank, per_host = [], {}
    for host in hosts:
        local_rank.append(per_host.get(host, 0))
        per_host[host] = local_rank[-1] + 1
    cross_rank, per_local = [], {}
    for lr in local_rank:
        cross_rank.append(per_local.get(lr, 0))
        per_local[lr] = cross_rank[-1] + 1
    return [Place(lr, per_host[h], cr, per_local[lr])
            for h, lr, cr in zip(hosts, local_rank, cross_rank)]


def worker_env(rank, size, place, hostname, rdv_addr, rdv_port, job):
    """The variables of one rank, as a dict of strings."""
    return {
        "HVD_RANK": str(rank),
        "HVD_SIZE": str(size),
        "HVD_LOCAL_RANK": str(place.local_rank),
        "HVD_LOCAL_SIZE": str(place.local_size),
        "HVD_CROSS_RANK": str(place.cross_rank),
        "HVD_CROSS_SIZE": str(place.cross_size),
        "HVD_HOSTNAME": str(hostname),
        "HVD_RENDEZVOUS_ADDR": str(rdv_addr),
        "HVD_RENDEZVOUS_PORT": str(int(rdv_port)),
        "HVD_SECRET": job.secret,
        "HVD_JOB_ID": job.job_id,
    }


def apply_env(env):
    """Makes this process's environment that of the job's rank: sets env and removes the job
    variables it does not set. Call before hvd.init() (not while a context is live)."""
    for name in JOB_VARIABLES:
        if name not in env:
            os.environ.pop(name, None)
    os.environ.update(env)


class ReservedPort:
    """A free TCP port of ``addr`` held by a bound, non-listening socket until close().

    Bound without SO_REUSEADDR (so no other socket holds the port), then given it, so that rank
    0's rendezvous server (which sets it too) can bind and listen beside it while another
    process picking a port cannot take it."""

    def __init__(self, addr):
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._sock.bind((addr, 0))
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        except OSError as e:
            self._sock.close()
            raise RuntimeError("cannot reserve a rendezvous port on %s: %s" % (addr, e)) from e
        self.port = self._sock.getsockname()[1]

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
