# SPDX-License-Identifier: Apache-2.0
"""The settings of an ElasticRayExecutor (Horovod's ElasticRayExecutor.create_settings)."""

import numbers
from dataclasses import dataclass
from typing import Optional

from hvd.ray.settings import Settings


def _whole(name, value, low, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError("%s must be an int >= %d, got %r" % (name, low, value))


@dataclass
class ElasticSettings(Settings):
    """Settings (timeout_s, placement_group_timeout_s, run_timeout_s, nics, verbose) plus:

    min_np: the job ends with an error when fewer workers are left (and does not start with
        fewer slots than this).
    max_np: at most this many workers (None: as many as Ray's nodes have slots).
    reset_limit: how many times the workers may reset (re-form after a failure or to take in
        new workers) before the job fails (HOROVOD_ELASTIC_RESET_LIMIT in each worker; None:
        hvd.elastic's default).
    elastic_timeout: how long a membership round waits for late workers, and each worker's
        hvd.init() for its round.
    discovery_interval_s: how often Ray's nodes are read while the job runs.
    discovery: with override_discovery=False, an object whose
        find_available_hosts_and_slots() returns {node address: slots}.
    """
    min_np: int = 1
    max_np: Optional[int] = None
    reset_limit: Optional[int] = None
    elastic_timeout: float = 600
    discovery_interval_s: float = 1.0
    discovery: object = None

    def validate(self):
        super().validate()
        _whole("min_np", self.min_np, 1)
        _whole("max_np", self.max_np, max(1, self.min_np), allow_none=True)
        _whole("reset_limit", self.reset_limit, 0, allow_none=True)
        for name, lowest in (("elastic_timeout", 1), ("discovery_interval_s", 0.01)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                    not value >= lowest:
                raise ValueError("%s must be a number of seconds >= %g, got %r"
                                 % (name, lowest, value))

def create_settings(min_np=1, max_np=None, reset_limit=None, elastic_timeout=600,
                    timeout_s=30, ssh_identity_file=None, nics=None, min_num_proc=None,
                    max_num_proc=None, placement_group_timeout_s=100, run_timeout_s=None,
                    verbose=1, discovery_interval_s=1.0, **kwargs):
    """Horovod's ElasticRayExecutor.create_settings (min_num_proc/max_num_proc are its older
    names of min_np/max_np). ssh_identity_file and Horovod's other ssh arguments in kwargs
    are accepted and ignored: workers are Ray actors and no ssh is involved."""
    unknown = set(kwargs) - {"ssh_str", "ssh_port", "start_timeout", "verbose_level"}
    if unknown:
        raise TypeError("create_settings got unexpected arguments %s" % sorted(unknown))
    settings = ElasticSettings(
        timeout_s=timeout_s, placement_group_timeout_s=placement_group_timeout_s,
        run_timeout_s=run_timeout_s, nics=nics, verbose=verbose,
        ssh_identity_file=ssh_identity_file, elastic=True,
        min_np=min_np if min_num_proc is None else min_num_proc,
        max_np=max_np if max_num_proc is None else max_num_proc, reset_limit=reset_limit,
        elastic_timeout=elastic_timeout, discovery_interval_s=discovery_interval_s)
    settings.validate()
    return settings
