# SPDX-License-Identifier: Apache-2.0
"""Elastic training state: TorchState (horovod.torch.elastic's, on hvd.common.elastic's State
and ObjectState), which commit, restore and synchronise models, optimizers,
ElasticSamplers and plain Python attributes."""

import copy

import torch

from hvd.common.elastic import HostUpdateResult, ObjectState, State  # noqa: F401
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import rank

__all__ = ["HostUpdateResult", "State", "ObjectState", "TorchState", "StateHandler",
           "ModelStateHandler", "OptimizerStateHandler", "SamplerStateHandler",
           "get_handler_registry", "set_handler_registry"]


class StateHandler:
    """Saves, restores and synchronises one kind of object inside a TorchState."""

    def __init__(self, value):
        self.value = value

    def save(self):
        raise NotImplementedError()

    def restore(self):
        raise NotImplementedError()

    def sync(self):
        raise NotImplementedError()

    def reset(self):
        pass

    def set_value(self, value):
        self.value = value
        self.save()


class _StateDictHandler(StateHandler):
    """Keeps a deep copy of value.state_dict(); restores from a fresh copy of it (newer
    PyTorch keeps loaded tensors as live state, whose in-place updates would otherwise change
    the saved copy too)."""

    def __init__(self, value):
        super().__init__(value)
        self._saved = copy.deepcopy(value.state_dict())

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(copy.deepcopy(self._saved))


class ModelStateHandler(_StateDictHandler):
    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(_StateDictHandler):
    def sync(self):
        # Indices recorded with record_indices are merged over all ranks; the rest is rank 0's.
        merged = set().union(*allgather_object(self.value.processed_indices,
                                               name="elastic.sampler.processed_indices"))
        state = self.value.state_dict()
        state["processed_indices"] = merged
        self.value.load_state_dict(broadcast_object(state, 0, name="elastic.sampler.state"))

    def reset(self):
        self.value.reset()  # re-partition for the new set of ranks


_handler_registry = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry():
    """The (type, StateHandler subclass) pairs TorchState consults, first match wins."""
    return _handler_registry


def set_handler_registry(registry):
    global _handler_registry
    _handler_registry = registry


def _handler_for(value):
    for value_type, handler_type in _handler_registry:
        if isinstance(value, value_type):
            return handler_type(value)
    return None


class TorchState(ObjectState):
    """The state of a PyTorch training process for hvd.torch.elastic.run.

    model, optimizer and any keyword argument become attributes. Modules, optimizers and
    ElasticSamplers (any number of each) are committed by deep copies of their state dicts
    and synchronised with broadcast_parameters / broadcast_optimizer_state /
    broadcast_object; other values (epoch, batch ...) are plain Python objects.
    """

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        handlers, plain = {}, {}
        for name, value in kwargs.items():
            handler = _handler_for(value)
            if handler is not None:
                handlers[name] = handler
            else:
                plain[name] = value
        self._handlers = handlers
        for name, handler in handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **plain)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def reset(self):
        for handler in self._handlers.values():
            handler.reset()
        super().reset()

    def __setattr__(self, name, value):
        handlers = self.__dict__.get("_handlers")
        if handlers is not None and name in handlers and name in self.__dict__:
            # A new model/optimizer/sampler replaces the tracked one and is saved at once.
            handlers[name].set_value(value)
        super().__setattr__(name, value)
