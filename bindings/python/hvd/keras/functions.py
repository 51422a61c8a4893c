# SPDX-License-Identifier: Apache-2.0
"""horovod.keras's collectives on tensor-compatible values, and load_model."""

import keras
import numpy as np

from hvd import _numpy_ops, _runtime
from hvd._basics import Average, Sum
from hvd.process_sets import global_process_set
from hvd.keras import _collectives
from hvd.keras.compression import Compression
from hvd.keras.optimizer import is_distributed, make_settings, wrap_class


def _tensor(value):
    return keras.ops.convert_to_tensor(value)


def allreduce(value, name=None, average=True, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none, process_set=global_process_set):
    """value (anything keras.ops.convert_to_tensor takes) averaged over the ranks (summed with
    average=False, or reduced with op); a tensor of Keras's backend."""
    if op is None:
        op = Average if average else Sum
    sent, ctx = compression.compress(_tensor(value))
    reduced = _collectives.framework().allreduce(sent, name=name, op=op,
                                                 prescale_factor=prescale_factor,
                                                 postscale_factor=postscale_factor,
                                                 process_set=process_set)
    return compression.decompress(reduced, ctx)


def allgather(value, name=None, process_set=global_process_set):
    """Every rank's value concatenated along the first dimension, in rank order."""
    return _collectives.framework().allgather(_tensor(value), name=name,
                                              process_set=process_set)


def broadcast(value, root_rank, name=None, process_set=global_process_set):
    """root_rank's value, on every rank."""
    return _collectives.framework().broadcast(_tensor(value), root_rank, name=name,
                                              process_set=process_set)


def reducescatter(value, name=None, op=Average, process_set=global_process_set):
    """This rank's block of rows of the reduction of value over the ranks."""
    return _collectives.framework().reducescatter(_tensor(value), name=name, op=op,
                                                  process_set=process_set)


def broadcast_variables(variables, root_rank, name="broadcast_variables",
                        process_set=global_process_set):
    """Assigns root_rank's values to keras.Variables (the same list, in the same order, on
    every rank). Runs eagerly through hvd's NumPy path, so it works on any Keras backend and
    any variable, in or out of a model."""
    variables = list(variables)
    handles = [_numpy_ops.broadcast_async(
        np.ascontiguousarray(keras.ops.convert_to_numpy(v.value)).reshape(-1), root_rank,
        name="%s.%d" % (name, i), process_set=process_set) for i, v in enumerate(variables)]
    for v, h in zip(variables, handles):
        v.assign(_runtime.synchronize(h).reshape(v.shape))


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """keras.models.load_model(filepath) with the model's optimizer wrapped in
    DistributedOptimizer (with compression), its state (iterations, slots, learning rate)
    kept. custom_optimizers: optimizer classes the saved model may use beyond Keras's own;
    custom_objects: passed to Keras."""
    return load_wrapped(filepath, custom_optimizers, custom_objects,
                        lambda base: make_settings(base, compression=compression))


def load_wrapped(filepath, custom_optimizers, custom_objects, settings_for):
    """load_model with the optimizer's class wrapped as settings_for(its class) says."""
    objects = {}
    for cls in custom_optimizers or []:
        objects[cls.__name__] = cls
    objects.update(custom_objects or {})
    model = keras.models.load_model(filepath, custom_objects=objects)
    old = getattr(model, "optimizer", None)
    if old is None:
        return model
    base = type(old).__mro__[2] if is_distributed(old) else type(old)
    new = wrap_class(base, settings_for(base)).from_config(old.get_config())
    if old.built:
        new.build(model.trainable_variables)
        if len(new.variables) != len(old.variables):
            raise ValueError("load_model: the loaded %s has %d variables, its "
                             "wrapped copy %d" % (base.__name__, len(old.variables),
                                                  len(new.variables)))
        for target, source in zip(new.variables, old.variables):
            target.assign(source.value)
    model.optimizer = new
    return model
