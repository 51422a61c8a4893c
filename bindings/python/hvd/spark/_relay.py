# SPDX-License-Identifier: Apache-2.0
"""The output relay of hvd.spark.run: each task sends its fn's stdout and stderr, and its error
if fn raised, to a TCP server on the driver, which writes the lines prefixed with the rank as
hvdrun does (``[1]<stdout>: ...``) and keeps the errors for run()'s exception.

A connection starts with the driver's random nonce; every frame after it is one line,
``<hmac> <json>``, MACed with the job's secret over the nonce, the frame's number and the
JSON, so only the job's tasks can write to the driver's streams. The first frame names the
rank (``hello``); then ``out`` (a stream's text) and ``error`` (fn's traceback).
"""

import hashlib
import hmac
import json
import secrets
import socket
import sys
import threading
import time

_GREETING = b"hvd.spark.relay 1 "
_HELLO_TIMEOUT_S = 10.0
_MAX_FRAME = 1 << 20  # bytes of one frame line
_CHUNK = 1 << 16  # characters of text per frame
_MAX_CONNS = 256  # open connections (the job's tasks and any stage retries)


def _mac(secret, nonce, seq, payload):
    msg = b"%s|%d|%s" % (nonce, seq, payload)
    return hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest().encode()


class RelayServer:
    """The driver's end: accepts the tasks' connections, writes their output to stdout/stderr
    and records their errors (``errors``: (rank, text) in the order they arrived)."""

    def __init__(self, secret, bind_addr, stdout, stderr, timestamps=False):
        self._secret = secret
        self._streams = {"stdout": stdout, "stderr": stderr}
        self._timestamps = timestamps
        self._lock = threading.Lock()
        self._conns = set()
        self._ranks = set()  # the ranks that said hello
        self._closed = False
        self.errors = []
        family = socket.AF_INET6 if ":" in bind_addr else socket.AF_INET
        try:
            self._sock = socket.create_server((bind_addr, 0), family=family)
        except OSError:  # a name that does not resolve here: every interface
            self._sock = socket.create_server(("", 0))
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name="hvd.spark.relay",
                                        daemon=True)
        self._thread.start()

    def registered(self, size):
        """Whether ranks 0..size-1 have all connected."""
        with self._lock:
            return len(self._ranks) >= size

    def _accept(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                if len(self._conns) >= _MAX_CONNS:
                    conn.close()
                    continue
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        partial = {}
        rank = None
        try:
            nonce = secrets.token_hex(16).encode()
            conn.sendall(_GREETING + nonce + b"\n")
            conn.settimeout(_HELLO_TIMEOUT_S)
            reader = conn.makefile("rb")
            seq = 0
            while True:
                line = reader.readline(_MAX_FRAME)
                if not line.endswith(b"\n"):
                    return  # closed, or a frame too long
                mac, _, payload = line[:-1].partition(b" ")
                if not hmac.compare_digest(mac, _mac(self._secret, nonce, seq, payload)):
                    return
                seq += 1
                frame = json.loads(payload)
                if rank is None:
                    if frame.get("k") != "hello":
                        return
                    rank = int(frame["rank"])
                    with self._lock:
                        self._ranks.add(rank)
                    conn.settimeout(None)  # fn may be silent for as long as it runs
                elif frame["k"] == "out" and frame.get("s") in self._streams:
                    self._write(rank, frame["s"], frame["t"], partial)
                elif frame["k"] == "error":
                    with self._lock:
                        self.errors.append((rank, frame["t"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # a closed connection or a malformed frame ends it
        finally:
            for stream in list(partial):
                self._write(rank, stream, "\n", partial)
            with self._lock:
                self._conns.discard(conn)
            conn.close()

    def _write(self, rank, stream, text, partial):
        """Writes the complete lines of partial[stream] + text, each prefixed."""
        text = partial.pop(stream, "") + text
        lines = text.split("\n")
        if lines[-1]:
            partial[stream] = lines[-1]
        if len(lines) == 1:
            return
        prefix = "[%d]<%s>: " % (rank, stream)
        if self._timestamps:
            prefix = time.strftime("%a %b %d %H:%M:%S %Y") + prefix
        out = "".join(prefix + line + "\n" for line in lines[:-1])
        with self._lock:
            target = self._streams[stream]
            target.write(out)
            target.flush()

    def drain(self, timeout_s):
        """Waits (at most timeout_s) until every task's connection has ended."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if not self._conns:
                    return
            time.sleep(0.02)

    def close(self):
        with self._lock:
            self._closed = True
            conns = list(self._conns)
        self._sock.close()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class RelayClient:
    """A task's end. Each stream's text is sent when a line is complete, on flush() and at
    close(); when the driver cannot be reached, lines go prefixed to the task's own streams
    (the executor's logs)."""

    def __init__(self, addr, port, secret, rank, connect_timeout_s=10.0):
        self._secret = secret
        self._rank = rank
        self._lock = threading.Lock()
        self._seq = 0
        self._sock = None
        self._fallback = {"stdout": sys.stdout, "stderr": sys.stderr}
        try:
            sock = socket.create_connection((addr, port), timeout=connect_timeout_s)
            greeting = sock.makefile("rb").readline(256)
            if not greeting.startswith(_GREETING) or not greeting.endswith(b"\n"):
                raise OSError("not hvd.spark's relay")
            self._nonce = greeting[len(_GREETING):-1]
            sock.settimeout(None)
            self._sock = sock
            self._send({"k": "hello", "rank": rank})
        except OSError as e:
            self._drop("hvd.spark: rank %d cannot reach the driver's output relay at %s:%d "
                       "(%s); its output stays in the executor's log" % (rank, addr, port, e))

    def _drop(self, why):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._fallback["stderr"].write(why + "\n")

    def _send(self, frame):
        payload = json.dumps(frame).encode()
        line = _mac(self._secret, self._nonce, self._seq, payload) + b" " + payload + b"\n"
        self._seq += 1
        self._sock.sendall(line)

    def write(self, stream, text):
        with self._lock:
            if self._sock is not None:
                try:
                    for i in range(0, len(text), _CHUNK):
                        self._send({"k": "out", "s": stream, "t": text[i:i + _CHUNK]})
                    return
                except OSError as e:
                    self._drop("hvd.spark: rank %d lost the driver's output relay (%s)"
                               % (self._rank, e))
            prefix = "[%d]<%s>: " % (self._rank, stream)
            lines = text.splitlines(True)
            self._fallback[stream].write("".join(prefix + line for line in lines))
            self._fallback[stream].flush()

    def error(self, text):
        with self._lock:
            if self._sock is not None:
                try:
                    self._send({"k": "error", "t": text})
                except OSError:
                    pass

    def close(self):
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


class RelayStream:
    """A text stream (sys.stdout or sys.stderr of fn) whose text goes through a RelayClient
    by lines."""

    def __init__(self, client, stream):
        self._client = client
        self._stream = stream
        self._buf = []
        self._lock = threading.Lock()
        self.encoding = "utf-8"
        self.errors = "strict"

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not %s" % type(text).__name__)
        with self._lock:
            self._buf.append(text)
            if "\n" not in text and sum(map(len, self._buf)) < _CHUNK:
                return len(text)
            pending = "".join(self._buf)
            cut = pending.rfind("\n") + 1 or len(pending)
            self._buf = [pending[cut:]] if cut < len(pending) else []
        self._client.write(self._stream, pending[:cut])
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self._lock:
            pending = "".join(self._buf)
            self._buf = []
        if pending:
            self._client.write(self._stream, pending)

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False
