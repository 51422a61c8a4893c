# SPDX-License-Identifier: Apache-2.0
"""horovod.torch.SyncBatchNorm: batch normalisation whose batch statistics cover every rank.

The statistics are computed here with plain tensor operations (PyTorch's fused
batch_norm_stats family has no CPU kernels), so the layer works on CPU and CUDA tensors
alike. Only the small per-channel statistics travel between ranks, through host memory:
one allgather in the forward pass and one allreduce in the backward pass.
"""

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from hvd.torch.mpi_ops import Sum, allgather_async, allreduce_async, size, synchronize

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over the batch of all ranks together (N-dimensional: input
    (N, C, ...)), for when each rank holds only a few samples.

    In training (and in evaluation with track_running_stats=False) the mean and variance of
    each channel are those of the concatenation of every rank's batch; the running
    statistics are updated with them identically on all ranks. Evaluation with running
    statistics normalises locally. The gradients of weight and bias are this rank's share
    (DistributedOptimizer combines them, as for any parameter); the input gradient accounts
    for every rank's batch. Every rank must call forward (and backward) together.

    Arguments as torch.nn.BatchNorm*: num_features (C), eps, momentum (None: cumulative
    moving average), affine, track_running_stats.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.dim()))

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) != self.num_features:
            raise ValueError("expected input with %d channels (dimension 1), got shape %s"
                             % (self.num_features, tuple(input.shape)))

        average_factor = 0.0
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                average_factor = 1.0 / float(self.num_batches_tracked)
            else:
                average_factor = self.momentum

        if not self.training and self.track_running_stats:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, False, 0.0, self.eps)

        # Batch statistics; the running ones are updated only in training.
        running_mean = self.running_mean if self.training else None
        running_var = self.running_var if self.training else None
        if size() == 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, True,
                                average_factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, average_factor)


def _compute_dtype(dtype):
    """Statistics of half-precision inputs are accumulated in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _channel_view(t, ndim):
    """A (C,) tensor shaped to broadcast against an (N, C, ...) input."""
    return t.view([1, -1] + [1] * (ndim - 2))


def _reduced_dims(ndim):
    return [0] + list(range(2, ndim))


class _SyncBatchNormFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, average_factor):
        x = input.contiguous()
        channels = x.size(1)
        ndim = x.dim()
        dtype = _compute_dtype(x.dtype)
        xc = x.to(dtype)
        dims = _reduced_dims(ndim)
        count = x.numel() // channels if channels else 0

        # This rank's count, mean and biased variance per channel, in one row of float64.
        if count > 0:
            local_mean = xc.mean(dim=dims)
            local_var = (xc - _channel_view(local_mean, ndim)).pow(2).mean(dim=dims)
        else:
            local_mean = xc.new_zeros(channels)
            local_var = xc.new_zeros(channels)
        row = torch.cat([torch.tensor([float(count)], dtype=torch.float64),
                         local_mean.detach().to("cpu", torch.float64),
                         local_var.detach().to("cpu", torch.float64)]).unsqueeze(0)
        rows = synchronize(allgather_async(row, name="sync_batch_norm.stats"))

        counts = rows[:, 0]
        total = float(counts.sum())
        if total <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got %d over "
                             "all ranks (input size %s on this rank)"
                             % (int(total), tuple(input.shape)))
        weights = (counts / total).unsqueeze(1)
        means = rows[:, 1:1 + channels]
        variances = rows[:, 1 + channels:]
        mean64 = (weights * means).sum(dim=0)
        var64 = (weights * (variances + (means - mean64).pow(2))).sum(dim=0)

        if running_mean is not None:
            running_mean.mul_(1.0 - average_factor).add_(
                (mean64 * average_factor).to(running_mean.device, running_mean.dtype))
        if running_var is not None:
            unbiased = var64 * (total / (total - 1.0))
            running_var.mul_(1.0 - average_factor).add_(
                (unbiased * average_factor).to(running_var.device, running_var.dtype))

        mean = mean64.to(x.device, dtype)
        invstd = (var64 + eps).rsqrt().to(x.device, dtype)
        out = (xc - _channel_view(mean, ndim)) * _channel_view(invstd, ndim)
        if weight is not None:
            out = out * _channel_view(weight.to(dtype), ndim)
        if bias is not None:
            out = out + _channel_view(bias.to(dtype), ndim)

        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = total
        ctx.has_bias = bias is not None
        return out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, mean, invstd = ctx.saved_tensors
        need_input, need_weight, need_bias = ctx.needs_input_grad[:3]
        ndim = x.dim()
        dims = _reduced_dims(ndim)
        dtype = mean.dtype
        dy = grad_output.contiguous().to(dtype)
        xmu = x.to(dtype) - _channel_view(mean, ndim)

        # This rank's sums; the input gradient needs them over all ranks.
        sum_dy = dy.sum(dim=dims)
        sum_dy_xmu = (dy * xmu).sum(dim=dims)

        grad_input = grad_weight = grad_bias = None
        if weight is not None and need_weight:
            grad_weight = (sum_dy_xmu * invstd).to(weight.dtype)
        if ctx.has_bias and need_bias:
            grad_bias = sum_dy.to(weight.dtype if weight is not None else dtype)

        if need_input:
            channels = x.size(1)
            local = torch.cat([sum_dy.detach(), sum_dy_xmu.detach()]).to("cpu", torch.float64)
            summed = synchronize(allreduce_async(local, op=Sum,
                                                 name="sync_batch_norm.grad_sums"))
            summed = summed.to(x.device, dtype)
            mean_dy = summed[:channels] / ctx.total
            mean_dy_xmu = summed[channels:] / ctx.total
            scale = invstd if weight is None else invstd * weight.to(dtype)
            grad_input = (dy - _channel_view(mean_dy, ndim)
                          - xmu * _channel_view(invstd.pow(2) * mean_dy_xmu, ndim))
            grad_input = (grad_input * _channel_view(scale, ndim)).to(x.dtype)

        return grad_input, grad_weight, grad_bias, None, None, None, None
