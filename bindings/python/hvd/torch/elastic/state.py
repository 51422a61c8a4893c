# SPDX-License-Identifier: Apache-2.0
"""Elastic training state: State and ObjectState (horovod.common.elastic's) and TorchState
(horovod.torch.elastic's), which commit, restore and synchronise models, optimizers,
ElasticSamplers and plain Python attributes."""

import copy
import enum
import queue

import torch

from hvd import _runtime
from hvd._errors import HostsUpdatedInterrupt
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                 broadcast_parameters)
from hvd.torch.mpi_ops import rank

__all__ = ["HostUpdateResult", "State", "ObjectState", "TorchState", "StateHandler",
           "ModelStateHandler", "OptimizerStateHandler", "SamplerStateHandler",
           "get_handler_registry", "set_handler_registry"]


class HostUpdateResult(enum.IntFlag):
    """What a host update did to the job (as horovod.runner.elastic.worker's)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class State:
    """What a training process must keep across reset events.

    commit() saves it (and is a collective point that checks for host updates); restore()
    returns to the last commit; sync() makes every rank hold rank 0's. Subclasses implement
    save, restore and sync.

    bcast_object(obj) -> rank 0's obj, and get_rank() -> this rank: the collectives used.
    """

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Adds functions (no arguments) to call after every reset, e.g. to rescale the
        learning rate to the new number of ranks."""
        for callback in callbacks:
            if not callable(callback):
                raise ValueError("reset callbacks must be callable, got %r" % (callback,))
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Records a host update notification; the next commit() (or check_host_updates())
        then raises HostsUpdatedInterrupt on every rank."""
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Saves the state in host memory, then checks for host updates (collective: every
        rank commits at the same points)."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank if any rank was told of a host update
        newer than the last one handled (in an elastic job rank 0 asks hvdrun whether workers
        wait to join). Collective."""
        self._ask_launcher()
        newest = previous = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, result = self._host_messages.get()
            if timestamp > newest:
                newest = timestamp
                update |= result
        views = allgather_object((previous, newest, int(update)),
                                 name="elastic.check_host_updates")
        previous = max(v[0] for v in views)
        newest = max(v[1] for v in views)
        update = HostUpdateResult.no_update
        for _, timestamp, result in views:
            if timestamp > previous:
                update |= result
        self._last_updated_timestamp = newest
        if newest > previous:
            raise HostsUpdatedInterrupt(update == HostUpdateResult.removed)

    def _ask_launcher(self):
        """Rank 0 of an elastic job: workers waiting to join the next round are a host update
        (added), stamped with that round's number."""
        if not _runtime.is_initialized() or self._rank() != 0:
            return
        round_, pending = _runtime.elastic_membership()
        if pending:
            self.on_hosts_updated(round_ + 1, HostUpdateResult.added)

    def save(self):
        """Saves the state in host memory."""
        raise NotImplementedError()

    def restore(self):
        """Returns to the last saved state, dropping later changes."""
        raise NotImplementedError()

    def sync(self):
        """Makes every rank's state rank 0's. Collective."""
        raise NotImplementedError()

    def reset(self):
        """Called after a reset, before the state is synchronised."""


class ObjectState(State):
    """State made of plain Python objects, given as keyword arguments and exposed as
    attributes; sync() broadcasts the committed values from rank 0."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._bcast_object = bcast_object
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


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
