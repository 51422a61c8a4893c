# SPDX-License-Identifier: Apache-2.0
"""The host discovery script of the elastic tests: a file of hosts, one per line, that a test
or a worker changes, and a script that prints it (for hvdrun --host-discovery-script). The
standard library only, so that every test runner can import it."""

import os


def discovery_files(directory, lines):
    """Writes the hosts file (`lines`) and its script into `directory`; returns their paths
    (hosts file, script)."""
    hosts = os.path.join(directory, "hosts")
    with open(hosts, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    script = os.path.join(directory, "discover.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\ncat '%s'\n" % hosts)
    os.chmod(script, 0o755)
    return hosts, script
