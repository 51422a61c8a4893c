#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints a TCP port of 127.0.0.1 that is free now, for a server a test or benchmark starts.

The port is drawn outside the kernel's range for automatic local ports
(net.ipv4.ip_local_port_range), so an outgoing connection of another process cannot take it
before the server binds it; the kernel's own choice when nothing outside that range binds.
"""
import random
import socket

LOWEST = 10000  # below sit well-known services


def kernel_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(w) for w in f.read().split())
        if 1 <= lo <= hi <= 65535:
            return lo, hi
    except (OSError, ValueError):
        pass
    return 32768, 60999


def binds(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return s.getsockname()[1]
        except OSError:
            return None


def main():
    lo, hi = kernel_range()
    outside = list(range(LOWEST, lo)) + list(range(hi + 1, 65536))
    for port in random.sample(outside, min(64, len(outside))):
        if binds(port):
            print(port)
            return
    print(binds(0))


if __name__ == "__main__":
    main()
