# SPDX-License-Identifier: Apache-2.0
"""The settings of a RayExecutor (Horovod's MiniSettings, made by create_settings)."""

import numbers
from dataclasses import dataclass, field
from typing import Optional


def _positive(name, value, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError("%s must be a positive number of seconds, got %r" % (name, value))


@dataclass
class Settings:
    """How a RayExecutor starts and bounds its job.

    timeout_s: how long starting may take: the workers' actors to come up, and hvd.init() in
        them (the library's rendezvous, HVD_START_TIMEOUT); also how long shutdown() waits for
        the workers to leave the job.
    placement_group_timeout_s: how long to wait for Ray to grant the placement group.
    run_timeout_s: the bound of each run/execute call (None: no bound). A worker that dies is
        reported at once whatever this is, and each collective is bounded by the library's
        HVD_OP_TIMEOUT.
    nics: network interfaces between hosts (HVD_IFACE), e.g. {"eth1"}; None: UCX's choice.
    verbose: 0 keeps the executor quiet; 1 (default) logs where the workers run (INFO).
    ssh_identity_file: accepted for compatibility with Horovod; unused (no ssh is involved).
    """
    timeout_s: float = 30
    placement_group_timeout_s: float = 100
    run_timeout_s: Optional[float] = None
    nics: Optional[set] = None
    verbose: int = 1
    ssh_identity_file: Optional[str] = None
    elastic: bool = field(default=False, repr=False)

    def validate(self):
        _positive("timeout_s", self.timeout_s)
        _positive("placement_group_timeout_s", self.placement_group_timeout_s)
        _positive("run_timeout_s", self.run_timeout_s, allow_none=True)
        if self.nics is not None:
            nics = [self.nics] if isinstance(self.nics, str) else list(self.nics)
            if not nics or not all(isinstance(n, str) and n and "," not in n for n in nics):
                raise ValueError("nics must be a non-empty set of interface names, got %r"
                                 % (self.nics,))


def create_settings(timeout_s=30, ssh_identity_file=None, ssh_str=None,
                    placement_group_timeout_s=100, nics=None, run_timeout_s=None, verbose=1):
    """Horovod's RayExecutor.create_settings; run_timeout_s and verbose are additions (see
    Settings). ssh_identity_file and ssh_str are accepted and ignored: workers are Ray actors,
    started by Ray, and no ssh is involved."""
    del ssh_str  # Horovod writes it to ssh_identity_file for its ssh launcher; none here
    settings = Settings(timeout_s=timeout_s, placement_group_timeout_s=placement_group_timeout_s,
                        run_timeout_s=run_timeout_s, nics=nics, verbose=verbose,
                        ssh_identity_file=ssh_identity_file)
    settings.validate()
    return settings
