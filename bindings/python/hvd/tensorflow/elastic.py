# SPDX-License-Identifier: Apache-2.0
"""hvd.tensorflow.elastic: horovod.tensorflow.elastic's run decorator, TensorFlowState and
TensorFlowKerasState, with the semantics of hvd.torch.elastic (see hvd.common.elastic.run_fn):
on a failed collective every surviving rank restores its last commit, rejoins the job
(hvd.shutdown() + hvd.init()) and continues from rank 0's state.

    state = hvd.elastic.TensorFlowState(model.variables, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        ...
        state.commit()

Graph mode (TensorFlow 1 sessions) is not supported: hvd.tensorflow runs eagerly and in
tf.function.
"""

from hvd.common.elastic import (ObjectState, State, run_fn,  # noqa: F401
                                tensorflow_internal_error)
from hvd.common.elastic_variables import VariablesState
from hvd.tensorflow.functions import broadcast_variables
from hvd.tensorflow.mpi_ops import init, shutdown

__all__ = ["run", "TensorFlowState", "TensorFlowKerasState", "State", "ObjectState"]


def _reset():
    shutdown()
    init()


def run(func=None, reset_limit=None):
    """Decorator for the elastic training function ``func(state, *args, **kwargs)``, whose
    first argument is a State (e.g. TensorFlowState); as hvd.torch.elastic.run. Usable as
    ``@run`` or ``@run(reset_limit=n)``."""
    if func is None:
        return lambda f: run(f, reset_limit=reset_limit)
    return run_fn(func, reset_limit, lambda: _reset(), "hvd.tensorflow.elastic",
                  "TensorFlowState", translate=tensorflow_internal_error)


class TensorFlowState(VariablesState):
    """The state of a TensorFlow training process: the tf.Variables given (by value) and any
    keyword argument as a plain Python attribute. sync() broadcasts the variables from rank 0
    with hvd.tensorflow.broadcast_variables."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None:
            raise ValueError("hvd.tensorflow.elastic.TensorFlowState: TensorFlow 1 sessions "
                             "are not supported; pass the variables of an eager program")
        if variables is None:
            raise ValueError("hvd.tensorflow.elastic.TensorFlowState needs the variables "
                             "(eager TensorFlow has no global variable collection)")
        self.variables = list(variables)
        super().__init__(lambda vs, root: broadcast_variables(vs, root), **kwargs)

    def _variables(self):
        return self.variables


def TensorFlowKerasState(model, optimizer=None, backend=None, **kwargs):
    """The state of a Keras model on TensorFlow: hvd.keras.elastic.KerasState (the model's
    and optimizer's variables, and keyword arguments as attributes). backend is accepted for
    Horovod's signature and not used."""
    from hvd.keras.elastic import KerasState
    return KerasState(model, optimizer=optimizer, backend=backend, **kwargs)
