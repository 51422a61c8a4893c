# SPDX-License-Identifier: Apache-2.0
"""ElasticSampler: a DistributedSampler that remembers what this epoch already processed, so
that a reset resumes the epoch instead of starting it over."""

import math
import random

import torch.utils.data

from hvd.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Splits a dataset among the ranks (rank r takes every size()-th index from position r
    of the epoch's order, padded by wrapping around so that all ranks get the same number)
    and, when tracked by a TorchState, carries the epoch's progress through resets.

    Progress is recorded in either of two ways; use one per epoch:

    * record_batch(batch_idx, batch_size) after every batch: the first
      batch_size * size() indices of the epoch's remaining order are done (every rank
      processed one batch).
    * record_indices(indices) with the dataset indices this rank processed (get_indices
      gives those of a batch); on sync the ranks' records are merged.

    Call set_epoch at the END of an epoch: it starts the next one with nothing processed.

    dataset: anything with len(), of constant size. shuffle: a new order every epoch,
    seeded with seed + epoch (the same on all ranks). hvd.init() must have been called.
    """

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed

        self.epoch = 0
        self.processed_num = 0
        self.processed_indices = set()

        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.indices = []
        self.num_samples = 0
        self.total_size = 0

        self.reset()

    def set_epoch(self, epoch):
        """Starts epoch `epoch` (its order when shuffling) with no samples processed."""
        self.epoch = epoch
        self.processed_num = 0
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks one more batch of batch_size samples per rank as processed on all ranks."""
        self.processed_num += batch_size * self.num_replicas

    def record_indices(self, indices):
        """Marks these dataset indices (processed by this rank) as done."""
        self.processed_indices.update(int(i) for i in indices)

    def get_indices(self, batch_idx, batch_size):
        """This rank's dataset indices of batch batch_idx (batches of batch_size, in the
        order __iter__ yields them)."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return dict(epoch=self.epoch, processed_num=self.processed_num,
                    processed_indices=set(self.processed_indices))

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.processed_indices = set(state_dict.get("processed_indices", ()))
        self.reset()

    def reset(self):
        """Re-partitions what remains of the epoch among the current ranks."""
        self.num_replicas = size()
        self.rank = rank()

        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        remaining = order[self.processed_num:]
        if self.processed_indices:
            remaining = [i for i in remaining if i not in self.processed_indices]
        self.remaining_indices = remaining

        self.num_samples = int(math.ceil(len(remaining) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        padded = list(remaining)
        while remaining and len(padded) < self.total_size:
            padded += remaining[:self.total_size - len(padded)]
        self.indices = padded[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        return iter(list(self.indices))

    def __len__(self):
        return self.num_samples
