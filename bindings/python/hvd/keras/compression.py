# SPDX-License-Identifier: Apache-2.0
"""Gradient compression for hvd.keras (horovod.keras's Compression): none and fp16, on any
Keras backend's tensors (keras.ops), traced or eager."""

import keras

from hvd._compression import Compressor, NoneCompressor  # noqa: F401


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and casts the result back."""

    @staticmethod
    def compress(tensor):
        dtype = keras.backend.standardize_dtype(tensor.dtype)
        if keras.backend.is_float_dtype(dtype) and dtype != "float16":
            return keras.ops.cast(tensor, "float16"), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else keras.ops.cast(tensor, ctx)


class Compression:
    """The available compressors."""

    none = NoneCompressor
    fp16 = FP16Compressor
