# SPDX-License-Identifier: Apache-2.0
"""VariablesState: the elastic State of frameworks whose training state is a list of
variables with numpy() and assign() (tf.Variable, keras.Variable), shared by
hvd.tensorflow.elastic and hvd.keras.elastic."""

import numpy as np

from hvd._basics import rank
from hvd._objects import broadcast_object
from hvd.common.elastic import ObjectState


class VariablesState(ObjectState):
    """ObjectState plus the variables that _variables() lists: commit() keeps copies of their
    values in host memory, restore() assigns those back, sync() assigns rank 0's values
    (broadcast_variables(variables, root_rank)) and commits them. Keyword arguments are plain
    Python attributes, synchronised from rank 0 by broadcast_object."""

    def __init__(self, broadcast_variables, **kwargs):
        self._broadcast_variables = broadcast_variables
        self._saved_values = self._values()
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def _variables(self):
        raise NotImplementedError()

    def _values(self):
        return [np.array(v.numpy(), copy=True) for v in self._variables()]

    def save(self):
        self._saved_values = self._values()
        super().save()

    def restore(self):
        variables = self._variables()
        if len(variables) != len(self._saved_values):
            raise ValueError("rank %d: %s holds %d variables but its last commit has %d; "
                             "create the state once all of them exist"
                             % (rank(), type(self).__name__, len(variables),
                                len(self._saved_values)))
        for v, value in zip(variables, self._saved_values):
            v.assign(value)
        super().restore()

    def sync(self):
        variables = self._variables()
        if variables:
            self._broadcast_variables(variables, 0)
        self._saved_values = self._values()
        super().sync()
