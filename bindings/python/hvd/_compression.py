# SPDX-License-Identifier: Apache-2.0
"""Gradient compression's framework-free part (horovod.<framework>.compression): the
compressor interface and the compressor that sends tensors unchanged."""


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
