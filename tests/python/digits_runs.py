# SPDX-License-Identifier: Apache-2.0
"""What the tests that compare a digits example on a cluster engine with hvdrun's run share:
the examples' directory, a bounded run of a command, and the numbers the examples print."""

import os
import subprocess
import time

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "python")


def run(cmd, bound_s):
    """Runs cmd (killed after bound_s seconds); asserts it exits 0. Returns (output, seconds)."""
    start = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=bound_s)
    assert out.returncode == 0, "%s exited with %d:\n%s" % (cmd, out.returncode, out.stdout)
    return out.stdout, time.monotonic() - start


def value(key, text):
    """The number of the one line that starts with key=."""
    lines = [line for line in text.splitlines() if line.startswith(key + "=")]
    assert len(lines) == 1, "expected one %s= line in:\n%s" % (key, text)
    return float(lines[0][len(key) + 1:])
