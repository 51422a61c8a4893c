# SPDX-License-Identifier: Apache-2.0
"""train_elastic.py's job on hvd.tensorflow.elastic: the model of elastic_model.py with its
weights in a tf.Variable, the gradients averaged by hvd.tensorflow's allreduce op, and a
TensorFlowState holding the weights, the step, the epoch and the samples processed in the
epoch (partitioned as ElasticSampler does). --kill-worker/--kill-step make one worker kill
itself at a step. Every rank prints its final weights as a JSON line."""

import argparse
import json
import math
import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elastic_model as m  # noqa: E402

import hvd.tensorflow as hvd  # noqa: E402


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--kill-worker", type=int, default=-1)
    p.add_argument("--kill-step", type=int, default=-1)
    return p.parse_args()


def main():
    args = parse()
    tf.config.set_visible_devices([], "GPU")
    worker = int(os.environ["HVD_WORKER_ID"])
    hvd.init()
    x, y = m.dataset()
    weights = tf.Variable(np.zeros(m.FEATURES), dtype=tf.float64)
    state = hvd.elastic.TensorFlowState([weights], step=0, epoch=0, processed=0)

    @hvd.elastic.run
    def train(state):
        while state.epoch < m.EPOCHS:
            rows = m.partition(state.processed, hvd.size())[hvd.rank()]
            for k in range(int(math.ceil(len(rows) / m.BATCH))):
                if state.step == args.kill_step and worker == args.kill_worker:
                    os.kill(os.getpid(), signal.SIGKILL)
                g = m.gradient(weights.numpy(), x, y, rows[k * m.BATCH:(k + 1) * m.BATCH])
                g = hvd.allreduce(tf.constant(g), op=hvd.Average, name="grad")
                weights.assign_sub(m.LR * g)
                state.processed += m.BATCH * hvd.size()
                state.step += 1
                if state.step % m.COMMIT_EVERY == 0:
                    state.commit()
            state.epoch += 1
            state.processed = 0
            state.commit()

    train(state)
    print(json.dumps({"worker": worker, "rank": hvd.rank(), "size": hvd.size(),
                      "step": state.step, "weights": [float(v) for v in weights.numpy()]}),
          flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
