# SPDX-License-Identifier: Apache-2.0
"""hvd.spark.run's argument checks (ValueError before anything starts, so no Spark session
is needed) and run_elastic's refusal."""

import pytest

import hvd.spark


def _fn():
    return 0


@pytest.mark.parametrize("kwargs, words", [
    ({"fn": 3}, "fn must be callable"),
    ({"args": 1}, "args must be a tuple or list"),
    ({"kwargs": [1]}, "kwargs must be a dict"),
    ({"num_proc": 0}, "num_proc must be a positive int"),
    ({"num_proc": 2.0}, "num_proc must be a positive int"),
    ({"num_proc": True}, "num_proc must be a positive int"),
    ({"start_timeout": 0}, "start_timeout must be a positive number"),
    ({"start_timeout": "10"}, "start_timeout must be a positive number"),
    ({"use_mpi": True}, "use_mpi=True asks for MPI"),
    ({"use_mpi": True, "use_gloo": True}, "use_mpi=True asks for MPI"),
    ({"extra_mpi_args": "--bind-to none"}, "extra_mpi_args are for mpirun"),
    ({"use_gloo": "yes"}, "use_gloo must be a bool"),
    ({"env": ["A=1"]}, "env must be a dict"),
    ({"env": {"HVD_RANK": "3"}}, "env must not set HVD_RANK"),
    ({"stdout": "out.txt"}, "stdout must be a stream"),
    ({"verbose": "2"}, "verbose must be an int"),
    ({"nics": "eth0"}, "nics must be a list of interface names"),
    ({"executable": "/usr/bin/python3"}, "executable is not used"),
])
def test_bad_arguments_raise_value_error(kwargs, words):
    kwargs.setdefault("fn", _fn)
    with pytest.raises(ValueError, match=words):
        hvd.spark.run(**kwargs)


def test_bad_start_timeout_variable(monkeypatch):
    monkeypatch.setenv("HOROVOD_SPARK_START_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="HOROVOD_SPARK_START_TIMEOUT='soon'"):
        hvd.spark.run(_fn)


def test_start_timeout_defaults(monkeypatch):
    from hvd.spark._runner import start_timeout_s

    monkeypatch.delenv("HVD_SPARK_START_TIMEOUT", raising=False)
    monkeypatch.delenv("HOROVOD_SPARK_START_TIMEOUT", raising=False)
    assert start_timeout_s(None) == 600.0
    monkeypatch.setenv("HOROVOD_SPARK_START_TIMEOUT", "42")
    assert start_timeout_s(None) == 42.0
    monkeypatch.setenv("HVD_SPARK_START_TIMEOUT", "7")
    assert start_timeout_s(None) == 7.0
    assert start_timeout_s(3) == 3.0


def test_no_spark_context():
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        pytest.skip("a SparkContext is active in this process")
    with pytest.raises(RuntimeError, match="no active SparkContext"):
        hvd.spark.run(_fn, num_proc=2)


def test_run_elastic_refuses():
    with pytest.raises(NotImplementedError, match="elastic membership is driven by hvdrun"):
        hvd.spark.run_elastic(_fn, num_proc=2, min_np=1, max_np=3)
