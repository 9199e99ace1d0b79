"""Synthetic-data benchmark shipped by the mxnet-dist chart (MXNet 1.x, ps-lite).

Every pod runs this file. On the scheduler and the servers (DMLC_ROLE=scheduler|server) `import mxnet`
itself runs the ps-lite node and returns only when all workers have finished. Workers train a small
convolutional network on random images with a distributed kvstore (dist_sync by default) on all their
GPUs (or the CPU) and print their throughput; exit status 0 proves the wiring (scheduler address,
DMLC_* variables, server connectivity).
"""
import argparse
import os
import socket
import time


def log(*parts):
    print("bench_mx:", *parts, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kvstore", default="dist_sync")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="images per device and step")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--width", type=int, default=32)
    args, unknown = parser.parse_known_args()

    role = os.environ.get("DMLC_ROLE", "worker")
    log(f"{role} on {socket.gethostname()}, scheduler {os.environ.get('DMLC_PS_ROOT_URI')}:"
        f"{os.environ.get('DMLC_PS_ROOT_PORT')}, {os.environ.get('DMLC_NUM_SERVER')} server(s), "
        f"{os.environ.get('DMLC_NUM_WORKER')} worker(s)")
    import mxnet as mx  # scheduler and servers serve inside this import and exit when the workers are done
    from mxnet import autograd, gluon, nd

    kv = mx.kv.create(args.kvstore)
    gpus = mx.context.num_gpus()
    devices = [mx.gpu(i) for i in range(gpus)] or [mx.cpu()]
    log(f"worker rank {kv.rank}/{kv.num_workers}, devices {devices}, ignored args {unknown}")

    net = gluon.nn.HybridSequential()
    width = args.width
    for channels in (width, 2 * width, 4 * width):
        net.add(gluon.nn.Conv2D(channels, 3, padding=1, use_bias=False), gluon.nn.BatchNorm(),
                gluon.nn.Activation("relu"), gluon.nn.MaxPool2D(2))
    net.add(gluon.nn.GlobalAvgPool2D(), gluon.nn.Flatten(), gluon.nn.Dense(1000))
    net.initialize(mx.init.Xavier(), ctx=devices)
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9}, kvstore=kv)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    size, batch = args.image_size, args.batch_size
    data = [nd.random.uniform(shape=(batch, 3, size, size), ctx=d) for d in devices]
    labels = [nd.random.randint(0, 1000, shape=(batch,), ctx=d).astype("float32") for d in devices]

    def step():
        with autograd.record():
            losses = [loss_fn(net(x), y) for x, y in zip(data, labels)]
        for loss in losses:
            loss.backward()
        trainer.step(batch * len(devices))
        return losses[0]

    for _ in range(args.warmup_steps):
        step()
    nd.waitall()
    start = time.perf_counter()
    for i in range(args.steps):
        loss = step()
        if kv.rank == 0 and (i + 1) % max(1, args.steps // 10) == 0:
            log(f"step {i + 1}/{args.steps} loss {loss.mean().asscalar():.3f}")
    nd.waitall()
    elapsed = time.perf_counter() - start
    rate = args.steps * batch * len(devices) / elapsed
    log(f"worker {kv.rank} throughput {rate:.1f} images/s on {len(devices)} device(s)")
    if kv.rank == 0:
        log(f"job throughput about {rate * kv.num_workers:.1f} images/s ({kv.num_workers} worker(s) x worker 0's rate)")


if __name__ == "__main__":
    main()
