# SPDX-License-Identifier: Apache-2.0
"""The NumPy package (import hvd) on arrays in CUDA memory: PyTorch CUDA tensors through
__cuda_array_interface__ (on PyTorch's current stream), the same through DLPack only, and CuPy
arrays when CuPy is there. Every collective against host references; results read on the
exporting stream without a host sync. Run under hvdrun on a machine with a GPU
(scripts/gpu_check.sh); exits 77 without one."""
import sys

import numpy as np
import torch

if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)

import hvd  # noqa: E402

hvd.init()
rank, size = hvd.rank(), hvd.size()
dev = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
torch.cuda.set_device(dev)
assert hvd.cuda_built(), "libhvd found no CUDA device"


def host(x):
    if isinstance(x, torch.Tensor):
        return x.cpu().double().numpy()
    return x.get().astype(np.float64)  # CuPy


def check(name, got, want, tol=1e-5):
    np.testing.assert_allclose(host(got), np.asarray(want, dtype=np.float64), atol=tol,
                               rtol=tol, err_msg=name)


class DLPackOnly:
    """A CUDA tensor seen through DLPack alone (as a JAX array would be)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def every_collective(make, tag):
    """make(numpy array) -> the same values as a CUDA array of the framework under test."""
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8):
        base = np.arange(17) % 5
        x = make((base + rank).astype(dtype))
        want = sum(base + r for r in range(size))
        check("%s allreduce sum %s" % (tag, np.dtype(dtype)), hvd.allreduce(x, op=hvd.Sum),
              want, 1e-2)
        hvd.allreduce_(x, op=hvd.Max)
        check("%s allreduce_ max %s" % (tag, np.dtype(dtype)), x, base + size - 1, 1e-2)
    check(tag + " allreduce average", hvd.allreduce(make(np.full((3, 4), float(rank)))),
          np.full((3, 4), (size - 1) / 2.0))
    check(tag + " allgather", hvd.allgather(make(np.full((rank + 1, 2), float(rank)))),
          np.concatenate([np.full((r + 1, 2), float(r)) for r in range(size)]))
    out = make(np.zeros((2 * size, 2)))
    hvd.allgather_into(make(np.full((2, 2), float(rank))), out)
    check(tag + " allgather_into", out, np.repeat(np.arange(size, dtype=float), 4).reshape(-1, 2))
    check(tag + " broadcast", hvd.broadcast(make(np.full(5, float(rank))), root_rank=size - 1),
          np.full(5, float(size - 1)))
    b = make(np.full(5, float(rank)))
    hvd.broadcast_(b, root_rank=0)
    check(tag + " broadcast_", b, np.zeros(5))
    a = hvd.alltoall(make(np.arange(size, dtype=np.float32) + 10 * rank))
    check(tag + " alltoall", a, [10.0 * r + rank for r in range(size)])
    check(tag + " reducescatter", hvd.reducescatter(make(np.ones((2 * size, 3))), op=hvd.Sum),
          np.full((2, 3), float(size)))
    g = hvd.grouped_allreduce([make(np.ones(4) * rank), make(np.ones(2))], op=hvd.Sum)
    check(tag + " grouped allreduce", g[0], np.full(4, float(sum(range(size)))))
    check(tag + " grouped allreduce[1]", g[1], np.full(2, float(size)))


def torch_cuda(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to(dev)


every_collective(torch_cuda, "torch (interface)")

# On a stream of the caller's: the op reads after the stream's earlier work and its result is
# valid on the stream, with no host synchronisation in between.
side = torch.cuda.Stream(device=dev)
with torch.cuda.stream(side):
    x = torch.zeros(1 << 20, device=dev)
    torch.cuda._sleep(50000000)  # holds the side stream back, so a read out of order shows
    x += rank + 1  # queued on side; the op must see it
    y = hvd.allreduce(x, op=hvd.Sum)
    z = y * 2  # queued on side after the op's work
side.synchronize()
check("stream order", z[:4], np.full(4, 2.0 * size * (size + 1) / 2))

# DLPack only: inputs exported for CUDA's default stream; new arrays made by PyTorch (or CuPy).
r = hvd.allreduce(DLPackOnly(torch_cuda(np.full(6, rank + 1.0))), op=hvd.Sum)
torch.cuda.synchronize()
check("DLPack allreduce", r, np.full(6, size * (size + 1) / 2.0))
r = hvd.allreduce(DLPackOnly(torch_cuda(np.full(6, rank + 1.0)).to(torch.bfloat16)),
                  op=hvd.Sum)
torch.cuda.synchronize()
check("DLPack allreduce bfloat16", r, np.full(6, size * (size + 1) / 2.0), 1e-2)

# bfloat16, which the interface cannot name: PyTorch's tensor goes through DLPack instead.
r = hvd.allreduce(torch.full((6,), rank + 1.0, device=dev, dtype=torch.bfloat16), op=hvd.Sum)
check("interface gap: bfloat16 tensor", r, np.full(6, size * (size + 1) / 2.0), 1e-2)
assert r.dtype == torch.bfloat16 and r.device == dev, (r.dtype, r.device)

try:
    import cupy
except ImportError:
    cupy = None
    print("CuPy is not installed: its arrays were not checked")
if cupy is not None:
    with cupy.cuda.Device(dev.index):
        every_collective(cupy.asarray, "CuPy")
        out = hvd.allreduce(cupy.full(3, rank + 1.0), op=hvd.Sum)
        assert isinstance(out, cupy.ndarray), type(out)

hvd.shutdown()
print("numpy_cuda_check: passed on %d rank(s)" % size)
