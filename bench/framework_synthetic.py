#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Synthetic data-parallel training throughput on CPU for one framework, with hvd or with that
framework's own multi-process data parallelism, launched on every rank by hvdrun:

    hvdrun -np 2 python3 framework_synthetic.py --framework tensorflow --backend hvd
    hvdrun -np 2 python3 framework_synthetic.py --framework tensorflow --backend native \
        --ports 29500,29501
    hvdrun -np 2 python3 framework_synthetic.py --framework jax --backend native --ports 29500

tensorflow: a Keras CNN trained by a tf.function step; hvd averages the gradients with
hvd.tensorflow.DistributedGradientTape, native runs the step under
tf.distribute.MultiWorkerMirroredStrategy (TF_CONFIG from --ports: one port per rank).
jax: a pure-JAX CNN trained by a jax.jit step; hvd averages the gradients with
hvd.jax.DistributedOptimizer's allreduce, native initialises jax.distributed (coordinator on
--ports' first port) with its gloo CPU collectives and averages with lax.pmean under
shard_map over one device per process. Every rank trains on one fixed random batch; rank r
is HVD_RANK. Rank 0 prints "Total img/sec on N rank(s): X" (the median of the timed
iterations, times N).
"""

import argparse
import json
import os
import statistics
import time

import numpy as np


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--framework", choices=("tensorflow", "jax"), required=True)
    p.add_argument("--backend", choices=("hvd", "native"), required=True)
    p.add_argument("--ports", default="", help="native: comma-separated ports (see above)")
    p.add_argument("--batch-size", type=int, default=32, help="images per rank and step")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--warmup", type=int, default=3, help="untimed steps")
    p.add_argument("--iters", type=int, default=5, help="timed iterations")
    p.add_argument("--steps-per-iter", type=int, default=5)
    return p.parse_args()


def timed(step, args, rank, size):
    for _ in range(args.warmup):
        step()
    rates = []
    for _ in range(args.iters):
        start = time.perf_counter()
        for _ in range(args.steps_per_iter):
            step()
        rates.append(args.batch_size * args.steps_per_iter / (time.perf_counter() - start))
    if rank == 0:
        print("Total img/sec on %d rank(s): %.1f" % (size, statistics.median(rates) * size),
              flush=True)


def data(args, rank):
    rng = np.random.default_rng(rank)
    x = rng.random((args.batch_size, args.image_size, args.image_size, 3), np.float32)
    y = rng.integers(0, 10, args.batch_size).astype(np.int32)
    return x, y


def run_tensorflow(args, rank, size):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ["KERAS_BACKEND"] = "tensorflow"
    if args.backend == "native":
        ports = args.ports.split(",")
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"worker": ["127.0.0.1:%s" % p for p in ports]},
            "task": {"type": "worker", "index": rank}})
    import keras
    import tensorflow as tf

    def model():
        keras.utils.set_random_seed(0)
        return keras.Sequential([
            keras.Input((args.image_size, args.image_size, 3)),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(), keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)])

    # MultiWorkerMirroredStrategy configures collectives before TensorFlow runs any op.
    strategy = tf.distribute.MultiWorkerMirroredStrategy() if args.backend == "native" else None
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = (tf.constant(a) for a in data(args, rank))
    if args.backend == "hvd":
        import hvd.tensorflow as hvd
        hvd.init()
        net, opt = model(), keras.optimizers.SGD(0.01)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = loss_fn(y, net(x, training=True))
            tape = hvd.DistributedGradientTape(tape)
            opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables),
                                    net.trainable_variables))

        timed(step, args, rank, size)
        return
    with strategy.scope():
        net, opt = model(), keras.optimizers.SGD(0.01)

    @tf.function
    def step():
        def replica():
            with tf.GradientTape() as tape:
                loss = loss_fn(y, net(x, training=True)) / size
            grads = tape.gradient(loss, net.trainable_variables)
            opt.apply_gradients(zip(grads, net.trainable_variables))
        strategy.run(replica)

    timed(step, args, rank, size)


def run_jax(args, rank, size):
    import jax
    import jax.numpy as jnp
    import optax

    def init(key):
        k = jax.random.split(key, 4)
        s = args.image_size // 2
        return {"c1": jax.random.normal(k[0], (3, 3, 3, 32)) * 0.1,
                "c2": jax.random.normal(k[1], (3, 3, 32, 64)) * 0.05,
                "d1": jax.random.normal(k[2], (s * s * 64, 128)) * 0.01,
                "d2": jax.random.normal(k[3], (128, 10)) * 0.1}

    def logits(p, x):
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME",
                                                     dimension_numbers=dn))
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME",
                                                     dimension_numbers=dn))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ p["d1"])
        return h @ p["d2"]

    def loss(p, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(logits(p, x), y).mean()

    x, y = data(args, rank)
    if args.backend == "hvd":
        import hvd.jax as hvd
        hvd.init()
        tx = hvd.DistributedOptimizer(optax.sgd(0.01))
        state = {"p": init(jax.random.PRNGKey(0))}
        state["o"] = tx.init(state["p"])

        @jax.jit
        def train(p, o, x, y):
            updates, o = tx.update(jax.grad(loss)(p, x, y), o, p)
            return optax.apply_updates(p, updates), o

        def step():
            state["p"], state["o"] = train(state["p"], state["o"], x, y)
            jax.block_until_ready(state["p"])

        timed(step, args, rank, size)
        return
    from jax.sharding import NamedSharding, PartitionSpec as P
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize("127.0.0.1:%s" % args.ports.split(",")[0], num_processes=size,
                               process_id=rank)
    mesh = jax.make_mesh((size,), ("d",))
    tx = optax.sgd(0.01)
    put = lambda a, spec: jax.make_array_from_process_local_data(  # noqa: E731
        NamedSharding(mesh, spec), a)
    params = jax.tree_util.tree_map(lambda a: put(np.asarray(a), P()), init(jax.random.PRNGKey(0)))
    opt_state = jax.tree_util.tree_map(lambda a: put(np.asarray(a), P()), tx.init(params))
    gx, gy = put(x, P("d")), put(y, P("d"))

    def local(p, o, x, y):
        grads = jax.lax.pmean(jax.grad(loss)(p, x, y), "d")
        updates, o = tx.update(grads, o, p)
        return optax.apply_updates(p, updates), o

    train = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P(), P(), P("d"), P("d")),
                                  out_specs=(P(), P())))
    state = {"p": params, "o": opt_state}

    def step():
        state["p"], state["o"] = train(state["p"], state["o"], gx, gy)
        jax.block_until_ready(state["p"])

    timed(step, args, rank, size)


def main():
    args = parse_args()
    rank, size = int(os.environ.get("HVD_RANK", 0)), int(os.environ.get("HVD_SIZE", 1))
    (run_tensorflow if args.framework == "tensorflow" else run_jax)(args, rank, size)


if __name__ == "__main__":
    main()
