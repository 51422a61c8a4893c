# SPDX-License-Identifier: Apache-2.0
"""What hvd.torch's and hvd.keras's DistributedOptimizer share, free of any framework: the
compressor interface and the identity compressor (their Compression classes add fp16), and
the even split of the gradients into groups (`groups=<int>`)."""


class Compressor:
    """Turns a tensor into what is sent, and the received tensor back."""

    @staticmethod
    def compress(tensor):
        """Returns (tensor to send, context for decompress)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


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
