# SPDX-License-Identifier: Apache-2.0
"""examples/python/ray_digits.py on 2 and 3 Ray workers (joining this run's Ray cluster)
trains as hvdrun's run of examples/python/torch_digits_train.py on as many ranks does: the
test accuracy >= 0.93 and within 0.01 of hvdrun's, the final training loss within 0.005 of
hvdrun's. HVD_TEST_HVDRUN names hvdrun."""

import os
import sys

import pytest
import ray

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from digits_runs import EXAMPLES, run, value  # noqa: E402

RUN_BOUND_S = 120


@pytest.mark.parametrize("n", [2, 3])
def test_digits_on_ray_match_hvdrun(n):
    hvdrun = os.environ.get("HVD_TEST_HVDRUN")
    if not hvdrun:
        pytest.skip("HVD_TEST_HVDRUN (hvdrun's path) is not set")
    address = ray.get_runtime_context().gcs_address
    on_ray, ray_s = run([sys.executable, os.path.join(EXAMPLES, "ray_digits.py"),
                         "--num-workers", str(n), "--address", address], RUN_BOUND_S)
    on_hvdrun, hvdrun_s = run([hvdrun, "-np", str(n), "--no-prefix", sys.executable,
                               os.path.join(EXAMPLES, "torch_digits_train.py")], RUN_BOUND_S)
    acc, loss = value("test_accuracy", on_ray), value("final_train_loss", on_ray)
    ref_acc, ref_loss = (value("test_accuracy", on_hvdrun),
                         value("final_train_loss", on_hvdrun))
    print("%d workers: Ray test_accuracy=%.4f final_train_loss=%.4f in %.1f s (job %.1f s); "
          "hvdrun %.4f %.4f in %.1f s" % (n, acc, loss, ray_s, value("ray_job_seconds", on_ray),
                                          ref_acc, ref_loss, hvdrun_s))
    assert acc >= 0.93
    assert abs(acc - ref_acc) <= 0.01 + 1e-9
    assert abs(loss - ref_loss) <= 0.005 + 1e-9
