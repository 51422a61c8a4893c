# SPDX-License-Identifier: Apache-2.0
"""A job that a launcher started (not hvdrun): hvd.init() finds the launcher, and the process
joins, reduces and leaves three times. Prints "reinit ok" on every rank."""
import sys

import numpy as np

import hvd

for i in range(3):
    hvd.init()
    out = hvd.allreduce(np.array([hvd.rank() + 1.0]), op=hvd.Sum, name="reinit.%d" % i)
    assert out[0] == hvd.size() * (hvd.size() + 1) / 2.0, out
    assert hvd.size() > 1, "ran as a job of one rank: the launcher was not found"
    hvd.shutdown()
# One write: a launcher forwarding both ranks' output may otherwise split the line.
sys.stdout.write("reinit ok\n")
sys.stdout.flush()
