# SPDX-License-Identifier: Apache-2.0
"""hvd.spark's output relay without Spark: a task's lines reach the driver's streams prefixed
by rank, partial lines are joined, errors are recorded, and a connection that does not know
the job's secret writes nothing."""

import io
import socket

from hvd.spark._relay import RelayClient, RelayServer, RelayStream

SECRET = "ab" * 32


def _server():
    out, err = io.StringIO(), io.StringIO()
    return RelayServer(SECRET, "127.0.0.1", out, err), out, err


def test_lines_prefixed_by_rank_and_errors_recorded():
    server, out, err = _server()
    try:
        client = RelayClient("127.0.0.1", server.port, SECRET, 2)
        stdout, stderr = RelayStream(client, "stdout"), RelayStream(client, "stderr")
        stdout.write("one\ntw")
        stdout.write("o")
        stdout.flush()  # a partial line waits on the driver for its end
        stdout.write("\nthree")
        stderr.write("oops\n")
        client.error("Traceback ...\nValueError: x\n")
        stdout.flush()
        client.close()
        server.drain(10)
        assert server.registered(1) and not server.registered(2)
    finally:
        server.close()
    assert out.getvalue() == "[2]<stdout>: one\n[2]<stdout>: two\n[2]<stdout>: three\n"
    assert err.getvalue() == "[2]<stderr>: oops\n"
    assert server.errors == [(2, "Traceback ...\nValueError: x\n")]


def test_wrong_secret_writes_nothing():
    server, out, _ = _server()
    try:
        client = RelayClient("127.0.0.1", server.port, "cd" * 32, 0)
        RelayStream(client, "stdout").write("forged\n")
        client.error("forged error")
        client.close()
        # a frame without a MAC
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            raw.makefile("rb").readline()
            raw.sendall(b'{"k": "hello", "rank": 0}\n')
        server.drain(10)
        assert not server.registered(1)
    finally:
        server.close()
    assert out.getvalue() == ""
    assert server.errors == []
