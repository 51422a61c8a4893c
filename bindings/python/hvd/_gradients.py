# SPDX-License-Identifier: Apache-2.0
"""What the DistributedOptimizers share, free of any framework: the even split of the
gradients into groups (`groups=<int>`). The compressor interface is hvd/_compression.py."""


def even_groups(items, n):
    """items split into n consecutive groups of near-equal length (the first ones longer)."""
    n = max(1, min(n, len(items)))
    base, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + base + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out
