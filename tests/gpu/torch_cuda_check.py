# SPDX-License-Identifier: Apache-2.0
"""hvd.torch on CUDA tensors, as a Horovod user writes it: every collective on tensors of the
current device, results read on the current stream (a side stream too), and
DistributedOptimizer on a CUDA model giving the same weights as one process on the global
batch. Run under hvdrun on a machine with a GPU (scripts/gpu_check.sh); exits 77 without
one."""
import sys

import torch

if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)

import hvd.torch as hvd  # noqa: E402

hvd.init()
rank, size = hvd.rank(), hvd.size()
dev = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
torch.cuda.set_device(dev)
assert hvd.cuda_built(), "libhvd found no CUDA device"


def check(name, got, want, tol=1e-5):
    if got.device != dev:
        raise AssertionError("%s: result on %s, not %s" % (name, got.device, dev))
    if not torch.allclose(got.cpu().double(), want.cpu().double(), atol=tol, rtol=tol):
        raise AssertionError("%s: got %s, want %s" % (name, got.cpu(), want.cpu()))


for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
              torch.int64, torch.uint8, torch.int8):
    x = (torch.arange(17, device=dev) % 5 + rank).to(dtype)
    want = sum((torch.arange(17) % 5 + r) for r in range(size)).to(dtype)
    check("allreduce sum %s" % dtype, hvd.allreduce(x, op=hvd.Sum), want, 1e-2)
    y = x.clone()
    hvd.allreduce_(y, op=hvd.Max)
    check("allreduce_ max %s" % dtype, y, (torch.arange(17) % 5 + size - 1).to(dtype), 1e-2)

x = torch.full((3, 4), float(rank), device=dev)
check("allreduce average", hvd.allreduce(x), torch.full((3, 4), (size - 1) / 2.0))
g = hvd.allgather(torch.full((rank + 1, 2), float(rank), device=dev))
check("allgather", g, torch.cat([torch.full((r + 1, 2), float(r)) for r in range(size)]))
b = hvd.broadcast(torch.full((5,), float(rank), device=dev), root_rank=size - 1)
check("broadcast", b, torch.full((5,), float(size - 1)))
a = hvd.alltoall(torch.arange(size, device=dev, dtype=torch.float32) + 10 * rank)
check("alltoall", a, torch.tensor([10.0 * r + rank for r in range(size)]))
rs = hvd.reducescatter(torch.ones(2 * size, 3, device=dev), op=hvd.Sum)
check("reducescatter", rs, torch.full((2, 3), float(size)))
# Outputs the library owns, on a side stream: each op reads what was queued there before it
# (a slow kernel delays the input), its result is valid there with no host wait, and the
# memory the release frees on that stream serves later ops without touching earlier results.
side = torch.cuda.Stream(device=dev)
gathered = []
with torch.cuda.stream(side):
    for i in range(12):
        x = torch.empty((rank + 1 + i % 3, 2), device=dev)
        torch.cuda._sleep(2000000)
        x.fill_(float(rank + i))
        gathered.append(hvd.allgather(x, name="side.%d" % i))
    # Enqueued on the side stream, synchronized on the default one, which then waits for it.
    x = torch.empty((rank + 1, 2), device=dev)
    torch.cuda._sleep(50000000)
    x.fill_(float(-rank))
    handle = hvd.allgather_async(x, name="side.switch")
switched = hvd.synchronize(handle)
check("allgather synchronized on another stream", switched,
      torch.cat([torch.full((r + 1, 2), float(-r)) for r in range(size)]))
# Into the caller's tensors too: enqueued on the side stream behind a slow kernel, synchronized
# and read on the default stream, which the synchronize makes wait for the op.
with torch.cuda.stream(side):
    inplace = torch.empty(1 << 20, device=dev)
    torch.cuda._sleep(50000000)
    inplace.fill_(float(rank + 1))
    reduce_handle = hvd.allreduce_async_(inplace, op=hvd.Sum, name="side.inplace")
    cast = torch.empty(1 << 20, device=dev)
    torch.cuda._sleep(50000000)
    cast.fill_(float(rank))
    cast_handle = hvd.broadcast_async_(cast, root_rank=size - 1, name="side.broadcast")
check("allreduce_ synchronized on another stream", hvd.synchronize(reduce_handle),
      torch.full((1 << 20,), float(size * (size + 1) // 2)))
check("broadcast_ synchronized on another stream", hvd.synchronize(cast_handle),
      torch.full((1 << 20,), float(size - 1)))
torch.cuda.current_stream(dev).wait_stream(side)
for i, got in enumerate(gathered):
    check("allgather %d on a side stream" % i, got,
          torch.cat([torch.full((r + 1 + i % 3, 2), float(r + i)) for r in range(size)]))

grouped = hvd.grouped_allreduce([torch.ones(4, device=dev) * rank, torch.ones(2, device=dev)],
                                op=hvd.Sum)
check("grouped allreduce", grouped[0], torch.full((4,), float(sum(range(size)))))

# DistributedOptimizer on a CUDA model: the same weights as one process on the global batch.
torch.manual_seed(0)
data = torch.randn(8 * size, 5)
target = data @ torch.arange(1.0, 6.0) + 0.5
model = torch.nn.Linear(5, 1).to(dev)
reference = torch.nn.Linear(5, 1)
reference.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                               named_parameters=model.named_parameters())
ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05)
mine = slice(8 * rank, 8 * (rank + 1))
for _ in range(5):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(data[mine].to(dev)).squeeze(1),
                                        target[mine].to(dev))
    loss.backward()
    opt.step()
    ref_opt.zero_grad()
    torch.nn.functional.mse_loss(reference(data).squeeze(1), target).backward()
    ref_opt.step()
check("DistributedOptimizer weights", model.weight, reference.weight, 1e-4)
print("rank %d: hvd.torch on %s is right" % (rank, dev))
hvd.shutdown()
