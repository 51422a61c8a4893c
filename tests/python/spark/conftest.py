# SPDX-License-Identifier: Apache-2.0
"""One Spark session per test module, in local mode with 3 task slots (``local[3]``): small
driver memory, quiet logging, no web UI; the executors' Python workers run this interpreter
and import hvd from this process's PYTHONPATH (the build tree's package)."""

import os
import sys

import pytest

SLOTS = 3


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[%d]" % SLOTS).appName("hvd.spark tests")
               .config("spark.driver.memory", "512m")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
               .getOrCreate())
    session.sparkContext.setLogLevel("FATAL")
    yield session
    session.stop()
