"""TensorFlow side of bench/frameworks.py: asynchronous parameter-server training on synthetic data.

Run by tensorflow-dist (`--set-file script=...`, chief=1, ps=1, worker=N) in every role with TF_CONFIG set:
ps and worker tasks serve (tf.distribute.Server(...).join(); the chart's watchdog stops them once the chief
is done); the chief builds ParameterServerStrategy and a ClusterCoordinator, which hands each scheduled
training step to whichever worker is free. Every step reads the variables from the parameter server and
writes its update back without waiting for the other workers: asynchronous training, as in the talk.

The models are written with tf.* ops (no Keras: Keras 3 does not support ParameterServerStrategy). The LSTM
is the usual gate layout (one matmul for the four gates per step); the embedding is gathered on the
parameter server and updated sparsely, as TensorFlow's own optimizers do.

The chief prints one line `fwbench {json}`: every timed step over the timed wall time (aggregate batches/s).
Per-worker rates are not observable here (the coordinator, not the worker, picks the step).
"""

import argparse
import collections
import json
import os
import socket
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import tensorflow as tf  # noqa: E402


def log(*parts):
    print("fwbench:", *parts, flush=True)


def lenet_variables():
    shapes = [[5, 5, 1, 6], [6], [5, 5, 6, 16], [16], [400, 120], [120], [120, 84], [84], [84, 10], [10]]
    return [tf.Variable(tf.random.normal(s, stddev=0.1), name=f"lenet{i}") for i, s in enumerate(shapes)]


def lenet_loss(variables, batch):
    images = tf.random.uniform([batch, 28, 28, 1])
    labels = tf.random.uniform([batch], 0, 10, dtype=tf.int32)
    w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = [v.read_value() for v in variables]
    x = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(images, w1, 1, "SAME") + b1), 2, 2, "VALID")  # 14x14x6
    x = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(x, w2, 1, "VALID") + b2), 2, 2, "VALID")  # 5x5x16
    x = tf.reshape(x, [batch, 400])
    x = tf.nn.relu(tf.matmul(x, w3) + b3)
    x = tf.nn.relu(tf.matmul(x, w4) + b4)
    logits = tf.matmul(x, w5) + b5
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))


def lstm_variables(vocab, hidden, layers):
    def var(shape, name):
        return tf.Variable(tf.random.uniform(shape, -0.1, 0.1), name=name)

    out = [var([vocab, hidden], "embedding")]
    for layer in range(layers):
        out += [var([hidden, 4 * hidden], f"wx{layer}"), var([hidden, 4 * hidden], f"wh{layer}")]
        out += [tf.Variable(tf.zeros([4 * hidden]), name=f"b{layer}")]
    return out + [var([hidden, vocab], "softmax_w"), tf.Variable(tf.zeros([vocab]), name="softmax_b")]


def lstm_loss(variables, batch, steps, vocab, hidden, layers):
    tokens = tf.random.uniform([batch, steps + 1], 0, vocab, dtype=tf.int32)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    x = tf.nn.embedding_lookup(variables[0], tf.transpose(inputs))  # [steps, batch, hidden]
    for layer in range(layers):
        wx, wh, b = (v.read_value() for v in variables[1 + 3 * layer : 4 + 3 * layer])
        projected = tf.reshape(tf.matmul(tf.reshape(x, [-1, hidden]), wx) + b, [steps, batch, 4 * hidden])
        h = c = tf.zeros([batch, hidden])
        outputs = []
        for t in range(steps):
            i, f, g, o = tf.split(projected[t] + tf.matmul(h, wh), 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c)
            outputs.append(h)
        x = tf.stack(outputs)
    softmax_w, softmax_b = variables[-2].read_value(), variables[-1].read_value()
    logits = tf.matmul(tf.reshape(x, [-1, hidden]), softmax_w) + softmax_b
    labels = tf.reshape(tf.transpose(targets), [-1])
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))


def sgd(variables, loss_fn, lr):
    with tf.GradientTape() as tape:
        loss = loss_fn()
    for var, grad in zip(variables, tape.gradient(loss, variables), strict=True):
        if isinstance(grad, tf.IndexedSlices):  # the embedding: only the rows this batch used
            var.scatter_sub(tf.IndexedSlices(lr * grad.values, grad.indices))
        else:
            var.assign_sub(lr * grad)
    return loss


def serve(resolver, task_type, task_id, threads):
    log(f"{task_type} {task_id} on {socket.gethostname()} serving until the chief is done")
    # intra-op only: distributed TensorFlow deadlocks with a single inter-op thread (blocking receives)
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads)
    server = tf.distribute.Server(
        resolver.cluster_spec(), job_name=task_type, task_index=task_id, protocol="grpc", config=config, start=True
    )
    server.join()


def coordinate(args, resolver):
    workers = len(resolver.cluster_spec().as_dict().get("worker", []))
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        if args.model == "lenet":
            variables = lenet_variables()
            batch = args.batch_size or 64

            def loss_fn():
                return lenet_loss(variables, batch)
        else:
            variables = lstm_variables(args.vocab, args.hidden, args.layers)
            batch = args.batch_size or 20

            def loss_fn():
                return lstm_loss(variables, batch, args.seq_len, args.vocab, args.hidden, args.layers)

    @tf.function
    def step():
        return strategy.run(sgd, args=(variables, loss_fn, args.lr))

    for _ in range(args.warmup * workers):
        coordinator.schedule(step)
    coordinator.join()
    # Keep every worker busy: 2 steps in flight per worker; fetch the oldest, schedule one more, until time.
    pending = collections.deque()
    loss = None
    start = time.time()
    scheduled = 0
    for _ in range(2 * workers):
        pending.append(coordinator.schedule(step))
        scheduled += 1
    while time.time() - start < args.seconds:
        loss = pending.popleft().fetch()
        pending.append(coordinator.schedule(step))
        scheduled += 1
    coordinator.join()
    end = time.time()
    result = {
        "framework": "tensorflow",
        "version": tf.__version__,
        "model": args.model,
        "mode": "parameter-server (ClusterCoordinator), asynchronous",
        "role": "chief",
        "rank": None,
        "workers": workers,
        "batch_size": batch,
        "batches": scheduled,
        "start": start,
        "end": end,
        "rate": scheduled / (end - start),
        "loss": None if loss is None else float(loss),
    }
    print("fwbench " + json.dumps(result), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=["lenet", "lstm"], required=True)
    parser.add_argument("--seconds", type=float, default=25, help="length of the timed section")
    parser.add_argument("--warmup", type=int, default=10, help="untimed batches per worker")
    parser.add_argument("--batch-size", type=int, default=0, help="0: 64 for lenet, 20 for lstm")
    parser.add_argument("--seq-len", type=int, default=20)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--hidden", type=int, default=200)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of every task")
    args = parser.parse_args()

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type in ("ps", "worker"):
        serve(resolver, task_type, task_id, args.threads)
    elif task_type == "chief":
        log(f"chief on {socket.gethostname()}, TensorFlow {tf.__version__}, model {args.model}")
        coordinate(args, resolver)
    else:
        raise SystemExit(f"fwbench: nothing to do as {task_type}; run with chief=1, ps>=1, worker>=1")


if __name__ == "__main__":
    main()
