# SPDX-License-Identifier: Apache-2.0
"""hvd.torch.shared_zeros: CPU tensors on hvd_mem_alloc memory, reduced in place by the ranks
of one host; against references every rank computes on its own."""

import torch

import hvd.torch as hvd


def rank_values(r, n):
    return ((torch.arange(n) * 7 + r * 3) % 11 - 5).to(torch.float32)


def test_allreduce_in_place_on_shared_tensor():
    t = hvd.shared_zeros(256, 1024)
    assert t.shape == (256, 1024) and t.dtype == torch.float32 and not t.any()
    t.copy_(rank_values(hvd.rank(), t.numel()).view(256, 1024))
    hvd.allreduce_(t, op=hvd.Sum, name="torch.shared.whole")
    expected = sum(rank_values(r, t.numel()) for r in range(hvd.size())).view(256, 1024)
    assert torch.equal(t, expected)


def test_views_of_a_flat_buffer():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Linear(128, 10))
    params = list(model.parameters())
    flat = hvd.shared_zeros(sum(p.numel() for p in params), dtype=torch.float64)
    views, at = [], 0
    for k, p in enumerate(params):
        v = flat[at:at + p.numel()].view(p.shape)
        v.copy_(rank_values(hvd.rank() + k, p.numel()).view(p.shape).to(torch.float64))
        views.append(v)
        at += p.numel()
    handles = [hvd.allreduce_async_(v, op=hvd.Average, name="torch.shared.grad.%d" % k)
               for k, v in enumerate(views)]
    for h in handles:
        hvd.synchronize(h)
    for k, (p, v) in enumerate(zip(params, views)):
        expected = sum(rank_values(r + k, p.numel()).to(torch.float64)
                       for r in range(hvd.size())) / hvd.size()
        assert torch.allclose(v.reshape(-1), expected, rtol=0, atol=1e-12)
    assert flat.data_ptr() == views[0].data_ptr()  # the results landed in the flat buffer


def test_size_as_a_tuple_and_dtypes():
    assert hvd.shared_zeros((3, 4), dtype=torch.int32).shape == (3, 4)
    assert hvd.shared_zeros(torch.Size([5]), dtype=torch.bfloat16).dtype == torch.bfloat16
