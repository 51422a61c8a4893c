# SPDX-License-Identifier: Apache-2.0
"""init/shutdown cycles, topology, process sets, timeline, capability queries."""

import json
import os
import tempfile

import numpy as np
import pytest

import hvd


def test_topology():
    assert hvd.is_initialized()
    assert 0 <= hvd.rank() < hvd.size()
    assert hvd.size() == int(os.environ["HVD_SIZE"])
    assert hvd.rank() == int(os.environ["HVD_RANK"])
    assert hvd.local_size() == hvd.size()  # hvdrun started every rank on this host
    assert hvd.local_rank() == hvd.rank()
    assert hvd.cross_size() == 1 and hvd.cross_rank() == 0
    assert hvd.is_homogeneous()


def test_capabilities():
    assert hvd.mpi_built() is False and hvd.gloo_built() is False
    assert isinstance(hvd.nccl_built(), bool) and isinstance(hvd.cuda_built(), bool)
    assert hvd.backend_name() == os.environ.get("HVD_PY_BACKEND", hvd.backend_name())
    assert hvd.version().count(".") == 2


def test_reinit_cycles():
    for cycle in range(5):
        hvd.shutdown()
        assert not hvd.is_initialized()
        with pytest.raises(ValueError, match="not been initialized"):
            hvd.rank()
        hvd.shutdown()  # a second shutdown is harmless
        hvd.init()
        hvd.init()  # a second init is a no-op
        out = hvd.allreduce(np.array([cycle + hvd.rank()]), op=hvd.Sum)
        assert out[0] == cycle * hvd.size() + sum(range(hvd.size()))


def test_process_sets():
    evens = hvd.add_process_set([r for r in range(hvd.size()) if r % 2 == 0])
    last = hvd.add_process_set(hvd.ProcessSet([hvd.size() - 1]))
    assert evens.process_set_id != last.process_set_id
    assert evens.size() == (hvd.size() + 1) // 2
    assert evens.included() == (hvd.rank() % 2 == 0)
    if evens.included():
        assert evens.rank() == hvd.rank() // 2
    else:
        with pytest.raises(ValueError, match="not part"):
            evens.rank()
    if evens.included():
        out = hvd.allreduce(np.array([hvd.rank()]), op=hvd.Sum, process_set=evens)
        assert out[0] == sum(range(0, hvd.size(), 2))
        root = max(evens.ranks)
        np.testing.assert_array_equal(
            hvd.broadcast(np.array([hvd.rank()]), root, process_set=evens), [root])
    if last.included():
        np.testing.assert_array_equal(hvd.allgather(np.array([7]), process_set=last), [7])
    with pytest.raises(ValueError, match="duplicate"):
        hvd.add_process_set(list(evens.ranks))
    assert hvd.remove_process_set(evens)
    assert hvd.remove_process_set(last)
    assert not hvd.remove_process_set(evens)
    assert not hvd.remove_process_set(hvd.global_process_set)
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(np.ones(1), process_set=evens)


def test_process_sets_at_init():
    hvd.shutdown()
    first = hvd.ProcessSet([0])
    hvd.init(process_sets=[first])
    assert first.size() == 1
    if hvd.rank() == 0:
        np.testing.assert_array_equal(hvd.allreduce(np.array([5]), process_set=first), [5])
    hvd.shutdown()
    assert first.process_set_id is None  # sets do not outlive the job
    hvd.init()


def test_bad_process_set():
    with pytest.raises(ValueError):
        hvd.add_process_set([hvd.size()])
    with pytest.raises(ValueError, match="duplicate"):
        hvd.add_process_set(list(range(hvd.size())))  # the global set
    with pytest.raises(ValueError):
        hvd.ProcessSet(["a"])


def test_timeline(tmp_path_factory):
    path = os.path.join(tempfile.mkdtemp(), "timeline.%d.json" % hvd.rank())
    hvd.start_timeline(path, mark_cycles=True)
    hvd.allreduce(np.ones(64), name="timeline.tensor")
    hvd.stop_timeline()
    with open(path) as f:
        events = json.load(f)
    names = json.dumps(events)
    assert "timeline.tensor" in names and "ALLREDUCE" in names
