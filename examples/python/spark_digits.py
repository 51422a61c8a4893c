#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Trains torch_digits_train.py's model in Spark tasks with hvd.spark.run.

    python3 spark_digits.py --num-proc 2                       # Spark in local mode
    python3 spark_digits.py --num-proc 2 3                     # one job each
    python3 spark_digits.py --num-proc 4 --master spark://host:7077

Each task runs torch_digits_train.main as one rank (the same training as under
`hvdrun -np N python3 torch_digits_train.py`: a fixed global batch, so any number of ranks
trains the same model); the ranks' output comes to this process prefixed by rank. For each
job one line gives rank 0's results and the job's wall time in Spark (tasks started,
trained, finished):

    num_proc=2 final_train_loss=0.xxxx test_accuracy=0.xxxx spark_job_seconds=x.xx

Options this script does not know go to torch_digits_train.py (--epochs,
--global-batch-size, ...). Needs pyspark (with a Java runtime), torch and scikit-learn on the
driver and the executors, and the hvd package on the executors.
"""

import argparse
import os
import sys
import time

from pyspark import cloudpickle
from pyspark.sql import SparkSession

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_digits_train  # noqa: E402 - from this script's folder

import hvd.spark  # noqa: E402


def train_on_spark(num_proc, train_argv, start_timeout=120):
    """torch_digits_train.main(train_argv) on num_proc Spark tasks (a SparkSession active);
    returns rank 0's (final_train_loss, test_accuracy)."""
    # The executors need not have this folder: the training code travels with the job.
    cloudpickle.register_pickle_by_value(torch_digits_train)
    results = hvd.spark.run(torch_digits_train.main, args=(list(train_argv),),
                            num_proc=num_proc, start_timeout=start_timeout)
    return results[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-proc", type=int, nargs="+", default=[2],
                   help="ranks (Spark tasks) of each job, one job per value")
    p.add_argument("--master", default=None,
                   help="Spark master (default: local[N], N the largest --num-proc)")
    args, train_argv = p.parse_known_args(argv)
    if min(args.num_proc) < 1:
        p.error("--num-proc must be >= 1")
    torch_digits_train.parse_args(train_argv)  # its errors before Spark starts
    # The executors' Python workers run this interpreter unless told otherwise.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.appName("hvd.spark digits")
             .master(args.master or "local[%d]" % max(args.num_proc))
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for n in args.num_proc:
            start = time.monotonic()
            loss, accuracy = train_on_spark(n, train_argv)
            print("num_proc=%d final_train_loss=%.4f test_accuracy=%.4f spark_job_seconds=%.2f"
                  % (n, loss, accuracy, time.monotonic() - start), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
