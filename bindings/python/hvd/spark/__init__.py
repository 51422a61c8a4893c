# SPDX-License-Identifier: Apache-2.0
"""hvd.spark: Horovod's ``horovod.spark.run`` over libhvd, inside a running PySpark job.

    from pyspark.sql import SparkSession
    import hvd.spark

    def train():
        import hvd
        hvd.init()
        ...
        return hvd.rank()

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    print(hvd.spark.run(train, num_proc=2))   # [0, 1]

run() starts fn in num_proc tasks of one barrier stage (all start together or none does);
task i is rank i. The tasks learn each other's hosts through the barrier context, rank 0 holds
the rendezvous port, and each task's environment is that of its rank under hvdrun (rank and
size, local and cross ranks, rendezvous address, the job's secret), so fn's ``hvd.init()``
runs libhvd's own authenticated rendezvous. The hvd package must be importable on the
executors.
"""

from hvd.spark._runner import run as _run

__all__ = ["run", "run_elastic"]


def run(fn, args=(), kwargs={}, num_proc=None, start_timeout=None, use_mpi=None, use_gloo=None,
        extra_mpi_args=None, env=None, stdout=None, stderr=None, verbose=1, nics=None,
        prefix_output_with_timestamp=False, executable=None):
    """Runs fn(*args, **kwargs) as every rank of a job in Spark tasks; returns the ranks'
    results in rank order.

    num_proc: ranks (Spark tasks); default: the SparkContext's default parallelism.
    start_timeout: seconds for all tasks to start (a barrier stage needs num_proc free task
    slots at once); default HVD_SPARK_START_TIMEOUT or HOROVOD_SPARK_START_TIMEOUT, else
    600. TimeoutError when they do not, and the stage is cancelled.
    use_mpi, extra_mpi_args: MPI is not used; use_mpi=True or any extra_mpi_args raise
    ValueError. use_gloo: accepted (the tasks meet through libhvd's TCP rendezvous, the part
    Gloo plays in Horovod).
    env: variables set in each task's environment while fn runs (not the job's own HVD_*).
    stdout, stderr: where the driver writes fn's output, each line prefixed with its rank as
    hvdrun does (``[1]<stdout>: ...``, with prefix_output_with_timestamp a time before it);
    default sys.stdout and sys.stderr.
    verbose: 2 or more also reports when the tasks have started.
    nics: the network interfaces between hosts (HVD_IFACE).
    executable: not used (fn runs in Spark's Python workers; see PYSPARK_PYTHON); anything
    but None raises ValueError.

    fn calls hvd.init() itself; a task leaves the job when fn returns. When fn raises on a
    rank, that rank aborts the job (the others' collectives fail with HVD_ERR_PEER_FAILED),
    the stage fails, and run raises RuntimeError with that rank's traceback. ValueError for
    malformed arguments."""
    return _run(fn, args, kwargs, num_proc, start_timeout, use_mpi, use_gloo, extra_mpi_args,
                env, stdout, stderr, verbose, nics, prefix_output_with_timestamp, executable)


def run_elastic(fn, args=(), kwargs={}, num_proc=None, min_np=None, max_np=None,
                start_timeout=None, elastic_timeout=None, reset_limit=None, env=None,
                stdout=None, stderr=None, verbose=1, nics=None,
                prefix_output_with_timestamp=False, min_num_proc=None, max_num_proc=None):
    """Horovod's elastic run on Spark. libhvd's elastic jobs (ranks joining or leaving a
    running job) are driven by hvdrun (--min-np/--max-np); nothing drives their membership
    rounds in Spark yet, so this raises NotImplementedError; hvd.spark.run runs a job of fixed
    size."""
    raise NotImplementedError(
        "hvd.spark.run_elastic: not available: libhvd's elastic membership is driven by "
        "hvdrun (--min-np/--max-np), not yet by hvd.spark; use hvd.spark.run with a fixed "
        "num_proc")
