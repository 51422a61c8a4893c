# SPDX-License-Identifier: Apache-2.0
"""broadcast_object and allgather_object: picklable Python objects through byte buffers."""

import ctypes
import pickle

from hvd import _dtypes, _op_args, _runtime
from hvd.process_sets import global_process_set

try:  # closures and lambdas too, when cloudpickle is installed (as Horovod does)
    import cloudpickle as _pickler
except ImportError:
    _pickler = pickle


def _buffer(data_or_size):
    buf = ctypes.create_string_buffer(data_or_size, max(len(data_or_size), 1)) \
        if isinstance(data_or_size, bytes) else ctypes.create_string_buffer(max(data_or_size, 1))
    return buf


def _bytes_desc(buf, n):
    return (ctypes.addressof(buf), _dtypes.UINT8, (n,))


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns root_rank's obj (pickled there, unpickled everywhere). Collective."""
    # (a fixed default: ranks often pass objects of different types, e.g. None off the root)
    name = _op_args.check_name(name) or "object"
    root = _op_args.root_in_set(root_rank, process_set)
    is_root = _runtime.rank() == root_rank
    payload = _pickler.dumps(obj) if is_root else b""
    length = ctypes.c_int64(len(payload))
    _runtime.run("broadcast", [(ctypes.addressof(length), _dtypes.INT64, ())],
                 [(ctypes.addressof(length), _dtypes.INT64, ())], keep=length,
                 name="broadcast_object.size." + name, process_set=process_set, root=root)
    n = length.value
    buf = _buffer(payload if is_root else n)
    _runtime.run("broadcast", [_bytes_desc(buf, n)], [_bytes_desc(buf, n)], keep=buf,
                 name="broadcast_object.data." + name, process_set=process_set, root=root)
    return obj if is_root else pickle.loads(ctypes.string_at(buf, n))


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's obj, as a list in rank order of the set. Collective."""
    name = _op_args.check_name(name) or "object"
    payload = _pickler.dumps(obj)
    length = ctypes.c_int64(len(payload))
    sizes_raw = _runtime.run("allgather", [(ctypes.addressof(length), _dtypes.INT64, (1,))],
                             keep=length, name="allgather_object.sizes." + name,
                             process_set=process_set, finish=lambda req: _runtime.output_bytes(req, 8))
    sizes = list((ctypes.c_int64 * (len(sizes_raw) // 8)).from_buffer_copy(sizes_raw))
    buf = _buffer(payload)
    data = _runtime.run("allgather", [_bytes_desc(buf, len(payload))], keep=buf,
                        name="allgather_object.data." + name, process_set=process_set,
                        finish=_runtime.output_bytes)
    out, offset = [], 0
    for n in sizes:
        out.append(pickle.loads(data[offset:offset + n]))
        offset += n
    return out
