#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""abuse_rendezvous.py ADDR PORT COUNT SECONDS

Opens COUNT connections to a rendezvous server and holds them: garbage, an oversized length
prefix, a slow sender that never finishes its frame, and a HELLO made without the job's
secret, in turn. Waits for the server to come up; stops early once it has gone (its job is
over), else after SECONDS. Prints one line with what it did."""
import resource
import socket
import struct
import sys
import time


def frame(msg_type, fields):
    body = bytes([msg_type]) + b"".join(struct.pack("<I", len(f)) + f for f in fields)
    return struct.pack("<I", len(body)) + body


def main():
    addr, port, count, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        limit = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    hello = frame(2, [struct.pack("<I", 1), struct.pack("<I", 0), struct.pack("<I", 2),
                      b"n" * 32, b"p" * 32])
    payloads = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\xff\xff\xff\x7f\x02", b"\x40\x00", hello]
    end = time.monotonic() + seconds
    held, opened, gone = [], 0, False
    while opened < count and time.monotonic() < end:
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError:
            break  # out of descriptors: the count printed below tells
        s.settimeout(2)
        try:
            s.connect((addr, port))
        except OSError:
            s.close()
            if opened > 0:
                gone = True
                break
            time.sleep(0.005)  # the server is not up yet
            continue
        s.setblocking(False)
        try:
            s.send(payloads[opened % len(payloads)])
        except OSError:
            pass
        held.append(s)
        opened += 1
    while not gone and time.monotonic() < end:  # hold them until the server goes
        try:
            socket.create_connection((addr, port), timeout=1).close()
        except OSError:
            gone = True
        time.sleep(0.1)
    print(f"abuse_rendezvous: {opened} abusive connections to {addr}:{port}", file=sys.stderr)
    for s in held:
        s.close()


if __name__ == "__main__":
    main()
