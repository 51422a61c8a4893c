# SPDX-License-Identifier: Apache-2.0
"""hvd.ray: Horovod's horovod.ray over libhvd: a job's workers as Ray actors.

    import ray
    from hvd.ray import RayExecutor

    def train():
        import hvd.torch as hvd
        hvd.init()
        ...
        return hvd.rank()

    ray.init()
    executor = RayExecutor(RayExecutor.create_settings(timeout_s=30), num_workers=4)
    executor.start()
    ranks = executor.run(train)          # [0, 1, 2, 3]
    executor.shutdown()

The workers join the job through libhvd's own authenticated rendezvous on rank 0's node;
Ray places and starts them. Elastic jobs (ElasticRayExecutor, or RayExecutor with
min_workers / max_workers) keep libhvd's membership rounds: see hvd.ray.elastic.
"""

from hvd.ray.elastic import ElasticJobError, ElasticRayExecutor
from hvd.ray.executor import RayExecutor
from hvd.ray.results import WorkerError
from hvd.ray.settings import Settings, create_settings

__all__ = ["RayExecutor", "ElasticRayExecutor", "ElasticJobError", "WorkerError",
           "Settings", "create_settings"]
