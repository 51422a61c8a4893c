# SPDX-License-Identifier: Apache-2.0
"""examples/python/spark_digits.py with jobs of 2 and 3 ranks (one Spark session in local
mode) trains as hvdrun's run of examples/python/torch_digits_train.py on as many ranks does:
the test accuracy >= 0.93 and within 0.01 of hvdrun's, the final training loss within 0.005
of hvdrun's. HVD_TEST_HVDRUN names hvdrun."""

import os
import re
import subprocess
import sys
import time

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                        "examples", "python")
RUN_BOUND_S = 150
SIZES = (2, 3)


def _run(cmd):
    start = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=RUN_BOUND_S)
    assert out.returncode == 0, "%s exited with %d:\n%s" % (cmd, out.returncode, out.stdout)
    return out.stdout, time.monotonic() - start


def _value(key, text):
    """The number of the one line that starts with key=."""
    lines = [line for line in text.splitlines() if line.startswith(key + "=")]
    assert len(lines) == 1, "expected one %s= line in:\n%s" % (key, text)
    return float(lines[0][len(key) + 1:])


def test_digits_on_spark_match_hvdrun():
    hvdrun = os.environ.get("HVD_TEST_HVDRUN")
    if not hvdrun:
        pytest.skip("HVD_TEST_HVDRUN (hvdrun's path) is not set")
    on_spark, spark_s = _run([sys.executable, os.path.join(EXAMPLES, "spark_digits.py"),
                              "--num-proc"] + [str(n) for n in SIZES])
    jobs = {int(m.group(1)): tuple(float(v) for v in m.groups()[1:])
            for m in re.finditer(r"^num_proc=(\d+) final_train_loss=([0-9.]+) "
                                 r"test_accuracy=([0-9.]+) spark_job_seconds=([0-9.]+)$",
                                 on_spark, re.M)}
    assert sorted(jobs) == list(SIZES), on_spark
    print("spark_digits.py, jobs of %s ranks: %.1f s in all" % (SIZES, spark_s))
    for n in SIZES:
        loss, acc, job_s = jobs[n]
        on_hvdrun, hvdrun_s = _run([hvdrun, "-np", str(n), "--no-prefix", sys.executable,
                                    os.path.join(EXAMPLES, "torch_digits_train.py")])
        ref_acc, ref_loss = (_value("test_accuracy", on_hvdrun),
                             _value("final_train_loss", on_hvdrun))
        print("%d ranks: Spark test_accuracy=%.4f final_train_loss=%.4f, job %.1f s; "
              "hvdrun %.4f %.4f in %.1f s" % (n, acc, loss, job_s, ref_acc, ref_loss, hvdrun_s))
        assert acc >= 0.93
        assert abs(acc - ref_acc) <= 0.01 + 1e-9
        assert abs(loss - ref_loss) <= 0.005 + 1e-9
