# SPDX-License-Identifier: Apache-2.0
"""Elastic training on Ray (Horovod's ElasticRayExecutor, RayExecutor(min_workers=...)):
refused with a clear error: libhvd's membership rounds are driven by hvdrun
(--min-np/--max-np), and nothing drives them on Ray yet."""

ELASTIC_UNAVAILABLE = (
    "hvd.ray: elastic training on Ray (ElasticRayExecutor, RayExecutor's min_workers, "
    "max_workers, reset_limit, cooldown_range) is not available: libhvd's elastic jobs, where "
    "workers leave and join a running job, are driven by hvdrun (--min-np/--max-np), and "
    "hvd.ray does not drive their membership rounds yet. Use RayExecutor(num_workers=N) for a "
    "fixed set of workers, or hvdrun's elastic mode.")


class ElasticUnavailableError(NotImplementedError):
    """Elastic membership was asked for on Ray, which hvd.ray does not drive yet."""

    def __init__(self):
        super().__init__(ELASTIC_UNAVAILABLE)


class ElasticRayExecutor:
    """Horovod's ElasticRayExecutor: raises ElasticUnavailableError (see ELASTIC_UNAVAILABLE)."""

    @staticmethod
    def create_settings(*args, **kwargs):
        raise ElasticUnavailableError()

    def __init__(self, *args, **kwargs):
        raise ElasticUnavailableError()
