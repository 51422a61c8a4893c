# SPDX-License-Identifier: Apache-2.0
"""examples/python/spark_digits.py with jobs of 2 and 3 ranks (one Spark session in local
mode) trains as hvdrun's run of examples/python/torch_digits_train.py on as many ranks does:
the test accuracy >= 0.93 and within 0.01 of hvdrun's, the final training loss within 0.005
of hvdrun's. HVD_TEST_HVDRUN names hvdrun."""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from digits_runs import EXAMPLES, run, value  # noqa: E402

RUN_BOUND_S = 150
SIZES = (2, 3)


def test_digits_on_spark_match_hvdrun():
    hvdrun = os.environ.get("HVD_TEST_HVDRUN")
    if not hvdrun:
        pytest.skip("HVD_TEST_HVDRUN (hvdrun's path) is not set")
    on_spark, spark_s = run([sys.executable, os.path.join(EXAMPLES, "spark_digits.py"),
                             "--num-proc"] + [str(n) for n in SIZES], RUN_BOUND_S)
    jobs = {int(m.group(1)): tuple(float(v) for v in m.groups()[1:])
            for m in re.finditer(r"^num_proc=(\d+) final_train_loss=([0-9.]+) "
                                 r"test_accuracy=([0-9.]+) spark_job_seconds=([0-9.]+)$",
                                 on_spark, re.M)}
    assert sorted(jobs) == list(SIZES), on_spark
    print("spark_digits.py, jobs of %s ranks: %.1f s in all" % (SIZES, spark_s))
    for n in SIZES:
        loss, acc, job_s = jobs[n]
        on_hvdrun, hvdrun_s = run([hvdrun, "-np", str(n), "--no-prefix", sys.executable,
                                   os.path.join(EXAMPLES, "torch_digits_train.py")], RUN_BOUND_S)
        ref_acc, ref_loss = (value("test_accuracy", on_hvdrun),
                             value("final_train_loss", on_hvdrun))
        print("%d ranks: Spark test_accuracy=%.4f final_train_loss=%.4f, job %.1f s; "
              "hvdrun %.4f %.4f in %.1f s" % (n, acc, loss, job_s, ref_acc, ref_loss, hvdrun_s))
        assert acc >= 0.93
        assert abs(acc - ref_acc) <= 0.01 + 1e-9
        assert abs(loss - ref_loss) <= 0.005 + 1e-9
