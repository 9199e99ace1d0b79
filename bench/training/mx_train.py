"""MXNet side of bench/frameworks.py: Gluon with the dist_async kvstore on synthetic data.

Run by mxnet-dist (`--set-file script=...`, server=1, worker=N) in every role: on the scheduler and the server
(DMLC_ROLE) `import mxnet` runs the ps-lite node and exits when the workers are done. Each worker pushes its
gradients to the server, which applies them at once (dist_async: no worker waits for another), and pulls the
weights back. The workers meet once (a kvstore barrier) before the timed section so that their windows overlap.

Every worker prints one line `fwbench {json}`: its timed batches over its timed wall time.
"""

import argparse
import json
import os
import socket
import time


def log(*parts):
    print("fwbench:", *parts, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=["lenet", "lstm"], required=True)
    parser.add_argument("--kvstore", default="dist_async")
    parser.add_argument("--seconds", type=float, default=25, help="length of the timed section")
    parser.add_argument("--warmup", type=int, default=10, help="untimed batches")
    parser.add_argument("--batch-size", type=int, default=0, help="0: 64 for lenet, 20 for lstm")
    parser.add_argument("--seq-len", type=int, default=20)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--hidden", type=int, default=200)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1, help="OpenMP and engine threads")
    args = parser.parse_args()

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["MXNET_CPU_WORKER_NTHREADS"] = str(args.threads)
    role = os.environ.get("DMLC_ROLE", "worker")
    log(f"{role} on {socket.gethostname()}")
    import mxnet as mx  # the scheduler and the server serve inside this import and exit there
    from mxnet import autograd, gluon, nd
    from mxnet.gluon import nn, rnn

    kv = mx.kv.create(args.kvstore)
    ctx = mx.cpu()
    if args.model == "lenet":
        batch = args.batch_size or 64
        net = nn.HybridSequential()
        net.add(
            nn.Conv2D(6, 5, padding=2, activation="relu"),
            nn.MaxPool2D(2),
            nn.Conv2D(16, 5, activation="relu"),
            nn.MaxPool2D(2),
            nn.Dense(120, activation="relu"),
            nn.Dense(84, activation="relu"),
            nn.Dense(10),
        )
        data = nd.random.uniform(shape=(batch, 1, 28, 28), ctx=ctx)
        labels = nd.random.randint(0, 10, shape=(batch,), ctx=ctx).astype("float32")
    else:
        batch = args.batch_size or 20
        net = nn.HybridSequential()
        net.add(
            nn.Embedding(args.vocab, args.hidden),
            rnn.LSTM(args.hidden, num_layers=args.layers, layout="NTC"),
            nn.Dense(args.vocab, flatten=False),
        )
        tokens = nd.random.randint(0, args.vocab, shape=(batch, args.seq_len + 1), ctx=ctx).astype("float32")
        data, labels = tokens[:, :-1], tokens[:, 1:]
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(data), labels)
        loss.backward()
        trainer.step(batch)
        loss.wait_to_read()  # at most one batch in flight: the clock sees what was really done
        return loss

    for _ in range(args.warmup):
        step()
    nd.waitall()
    kv._barrier()  # every worker starts its timed section together (ps-lite barrier through the scheduler)
    start = time.time()
    batches = 0
    while time.time() - start < args.seconds:
        loss = step()
        batches += 1
    nd.waitall()
    end = time.time()
    result = {
        "framework": "mxnet",
        "version": mx.__version__,
        "model": args.model,
        "mode": f"kvstore {kv.type}, asynchronous" if "async" in kv.type else f"kvstore {kv.type}",
        "role": "worker",
        "rank": kv.rank,
        "workers": kv.num_workers,
        "batch_size": batch,
        "batches": batches,
        "start": start,
        "end": end,
        "rate": batches / (end - start),
        "loss": float(loss.mean().asscalar()),
    }
    print("fwbench " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
