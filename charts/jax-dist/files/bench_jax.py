"""Synthetic-data data-parallel benchmark shipped by the jax-dist chart.

Every pod runs one JAX process. It joins the job with jax.distributed.initialize from the chart's variables
(JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; JAX reads JAX_LOCAL_DEVICE_IDS itself), then trains a
small MLP on random regression data: the global batch is sharded over every device of every process, the
parameters are replicated, and the jitted step's gradient mean is an all-reduce across all processes (gloo on CPU,
NCCL on GPUs). It needs no data set and no package beyond jax. Every process prints its process count, the
coordinator and its devices, process 0 the loss and the throughput (also as Katib-style `name=value` lines), and
every process its final-parameters checksum: equal on every process when the all-reduce crossed them all.
"""

import argparse
import hashlib
import os
import socket
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def init_params(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append((jax.random.normal(sub, (n_in, n_out)) * (2.0 / n_in) ** 0.5, jnp.zeros((n_out,))))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256, help="examples per process and step")
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=0.03)
    args, unknown = parser.parse_known_args()

    coordinator = os.environ["JAX_COORDINATOR_ADDRESS"]
    # the chart's heartbeatTimeoutSeconds: how long the coordinator waits for a silent process before it fails them all
    timeout = os.environ.get("DL_HEARTBEAT_TIMEOUT_SECONDS")
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
        process_id=int(os.environ["JAX_PROCESS_ID"]),
        **({"heartbeat_timeout_seconds": int(timeout)} if timeout else {}),
    )
    pid, count = jax.process_index(), jax.process_count()
    if pid == 0:
        print(f"bench_jax: {count} process(es), {jax.device_count()} device(s), batch {args.batch_size}/process, "
              f"jax {jax.__version__}, ignored args {unknown}", flush=True)
    print(f"bench_jax: process {pid}/{count} on {socket.gethostname()}, coordinator {coordinator}, "
          f"{jax.local_device_count()} local {jax.default_backend()} device(s) of {jax.device_count()}", flush=True)

    # one mesh axis over every device of every process: the batch is split along it, the parameters replicated
    mesh = Mesh(np.array(jax.devices()), ("data",))
    replicated = NamedSharding(mesh, PartitionSpec())
    sharded = NamedSharding(mesh, PartitionSpec("data"))
    params = jax.device_put(init_params(jax.random.key(0), [args.features, args.hidden, args.hidden, 1]), replicated)
    # each process its own data (a different key), all drawn from one linear target so the loss can fall
    target = np.random.default_rng(0).normal(size=(args.features, 1)).astype(np.float32)
    rng = np.random.default_rng(1 + pid)
    local_x = rng.normal(size=(args.batch_size, args.features)).astype(np.float32)
    local_y = np.tanh(local_x @ target)
    x = jax.make_array_from_process_local_data(sharded, local_x)
    y = jax.make_array_from_process_local_data(sharded, local_y)

    @jax.jit
    def step(params, x, y):
        # the loss is the mean over the global batch, so its gradient is an all-reduce across every process
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree.map(lambda p, g: p - args.learning_rate * g, params, grads), loss

    for _ in range(args.warmup_steps):
        params, loss = step(params, x, y)
    loss.block_until_ready()
    start = time.perf_counter()
    for i in range(args.steps):
        params, loss = step(params, x, y)
        if pid == 0 and (i + 1) % max(1, args.steps // 10) == 0:
            print(f"bench_jax: step {i + 1}/{args.steps} loss {float(loss):.4f}", flush=True)
    loss.block_until_ready()
    elapsed = time.perf_counter() - start

    rate = args.steps * args.batch_size * count / elapsed
    if pid == 0:
        print(f"bench_jax: total throughput {rate:.1f} examples/s over {count} process(es)", flush=True)
        # Katib's stdout metrics collector reads name=value lines
        print(f"loss={float(loss):.6f}", flush=True)
        print(f"examples_per_second={rate:.1f}", flush=True)
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(params):
        digest.update(np.asarray(leaf.addressable_data(0), dtype=np.float32).tobytes())
    print(f"bench_jax: process {pid} final parameters sha256 {digest.hexdigest()}", flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    main()
