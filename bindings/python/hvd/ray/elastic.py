# SPDX-License-Identifier: Apache-2.0
"""Elastic training on Ray (Horovod's ElasticRayExecutor, RayExecutor(min_workers=...)):
refused with a clear error, since libhvd has no elastic membership yet."""

ELASTIC_UNAVAILABLE = (
    "hvd.ray: elastic training on Ray (ElasticRayExecutor, RayExecutor's min_workers, "
    "max_workers, reset_limit, cooldown_range) needs libhvd's elastic jobs, where workers leave "
    "and join a running job; libhvd does not have them yet (hvd.torch.elastic recovers in "
    "place, with the same workers). Use RayExecutor(num_workers=N) for a fixed set of workers.")


class ElasticUnavailableError(NotImplementedError):
    """Elastic membership was asked for; libhvd does not provide it yet."""

    def __init__(self):
        super().__init__(ELASTIC_UNAVAILABLE)


class ElasticRayExecutor:
    """Horovod's ElasticRayExecutor: raises ElasticUnavailableError (see ELASTIC_UNAVAILABLE)."""

    @staticmethod
    def create_settings(*args, **kwargs):
        raise ElasticUnavailableError()

    def __init__(self, *args, **kwargs):
        raise ElasticUnavailableError()
