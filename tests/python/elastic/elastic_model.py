# SPDX-License-Identifier: Apache-2.0
"""The model of the elastic tests: linear regression on a fixed dataset, per-rank batches of
BATCH rows from an ElasticSampler (no shuffle) or the same partition (partition()), gradients
averaged over the ranks, plain SGD, in float64. NumPy only, so that every framework's worker
and test runner can use it. reference() replays the same training in one process for a given
history of membership changes, so a run's final weights can be compared with it."""

import math

import numpy as np

ROWS = 96
FEATURES = 4
BATCH = 4
EPOCHS = 2
LR = 0.05
COMMIT_EVERY = 3  # steps


def dataset():
    g = np.random.default_rng(1234)
    x = g.standard_normal((ROWS, FEATURES))
    true_w = np.array([1.5, -2.0, 0.5, 3.0])
    y = x @ true_w + 0.1 * g.standard_normal(ROWS)
    return x, y


def gradient(w, x, y, rows):
    """Mean gradient of the squared error over `rows` (a list of dataset indices), of NumPy
    arrays or of torch tensors."""
    xs, ys = x[rows], y[rows]
    return 2.0 * xs.T @ (xs @ w - ys) / len(rows)


def partition(processed, size):
    """Each rank's remaining indices of the epoch, as ElasticSampler(shuffle=False) splits
    them after `processed` samples: every size-th from position rank, padded by wrapping."""
    remaining = list(range(ROWS))[processed:]
    per_rank = int(math.ceil(len(remaining) / size))
    padded = list(remaining)
    while remaining and len(padded) < per_rank * size:
        padded += remaining[:per_rank * size - len(padded)]
    return [padded[r:per_rank * size:size] for r in range(size)]


def reference(initial_size, changes):
    """Final weights of a run that starts with initial_size ranks; `changes` maps a step
    number to (new size, rolled back): at the start of that step the membership becomes the
    new size, after rolling back to the last commit when rolled back (a worker died there),
    else right at a commit (workers were added)."""
    x, y = dataset()
    w = np.zeros(FEATURES)
    size, step, epoch, processed = initial_size, 0, 0, 0
    commit = (w.copy(), step, epoch, processed)
    pending = dict(changes)
    while epoch < EPOCHS:
        parts = partition(processed, size)
        batches = int(math.ceil(len(parts[0]) / BATCH))
        reset = False
        for k in range(batches):
            if step in pending:
                new_size, rolled_back = pending.pop(step)
                if rolled_back:
                    w, step, epoch, processed = commit[0].copy(), commit[1], commit[2], commit[3]
                size, reset = new_size, True
                break
            grads = [gradient(w, x, y, parts[r][k * BATCH:(k + 1) * BATCH]) for r in range(size)]
            w = w - LR * (sum(grads) / size)
            processed += BATCH * size
            step += 1
            if step % COMMIT_EVERY == 0:
                commit = (w.copy(), step, epoch, processed)
        if reset:
            continue
        epoch, processed = epoch + 1, 0
        commit = (w.copy(), step, epoch, processed)
    return w


def make_state(hvd):
    """A run's hvd.elastic.TorchState: the model at zero, an ElasticSampler (no shuffle) over
    the dataset, step and epoch 0."""
    import torch

    model = torch.nn.Linear(FEATURES, 1, bias=False).double()
    with torch.no_grad():
        model.weight.zero_()
    sampler = hvd.elastic.ElasticSampler(list(range(ROWS)), shuffle=False)
    return hvd.elastic.TorchState(model=model, sampler=sampler, step=0, epoch=0)


def train(hvd, state, before_batch):
    """The training of every elastic run, for hvd.elastic.run to call: EPOCHS epochs of
    BATCH-row batches, averaged gradients, a commit every COMMIT_EVERY steps and at each
    epoch's end. before_batch(state) runs before each batch (where a test changes the
    membership)."""
    import torch

    x, y = (torch.from_numpy(a) for a in dataset())
    while state.epoch < EPOCHS:
        indices = list(state.sampler)
        for k in range(0, len(indices), BATCH):
            before_batch(state)
            w = state.model.weight.data[0]
            g = hvd.allreduce(gradient(w, x, y, indices[k:k + BATCH]), op=hvd.Average,
                              name="grad")
            with torch.no_grad():
                state.model.weight[0] -= LR * g
            state.sampler.record_batch(k // BATCH, BATCH)
            state.step += 1
            if state.step % COMMIT_EVERY == 0:
                state.commit()
        state.epoch += 1
        state.sampler.set_epoch(state.epoch)
        state.commit()
