"""Synthetic-data Horovod benchmark shipped by the horovod-mpi chart (dl-charts).

Every rank trains an image-classification model on one fixed random batch (no input pipeline, no
downloads), so the number measures compute plus Horovod's allreduce. Rank 0 prints images/sec per rank
and in total. Works with PyTorch (default) or TensorFlow 2, on GPUs (one per rank, chosen by the local
rank) or on CPUs, and with `--elastic` under `horovodrun --host-discovery-script` (state is committed
after every timed iteration; a reset re-syncs and rescales the learning rate).
"""
import argparse
import hashlib
import math
import os
import socket
import sys
import time

CHECKPOINTS = os.environ.get("DL_CHECKPOINT_DIR", "")
EVERY = int(os.environ.get("DL_CHECKPOINT_EVERY_STEPS") or 0)


def cpu_budget():
    """CPUs this process may use: its cgroup's CPU quota (the pod's CPU limit) when there is one, else the CPUs
    it may run on. os.cpu_count() counts the node's: threads beyond the quota stall in CFS throttling."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()
        if quota != "max":
            return max(1, int(quota) // int(period))
    except (OSError, ValueError):
        pass
    return len(os.sched_getaffinity(0))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--framework", choices=["pytorch", "tensorflow"], default="pytorch")
    p.add_argument("--model", default="resnet50", help="torchvision / tf.keras.applications model name")
    p.add_argument("--batch-size", type=int, default=32, help="images per rank and step")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--warmup-batches", type=int, default=10)
    p.add_argument("--batches-per-iter", type=int, default=10)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--fp16-allreduce", action="store_true", help="compress gradients to fp16 for allreduce")
    p.add_argument("--use-adasum", action="store_true", help="Adasum instead of averaging")
    p.add_argument("--no-cuda", action="store_true", help="train on CPUs even if GPUs are visible")
    p.add_argument("--elastic", action="store_true", help="Horovod elastic mode (hvd.elastic.run)")
    return p.parse_args()


def report(hvd, rates, args, device):
    if hvd.rank() != 0:
        return
    mean = sum(rates) / len(rates)
    spread = 1.96 * math.sqrt(sum((r - mean) ** 2 for r in rates) / len(rates))
    print("model %s, batch size %d per rank, %d rank(s) on %s" % (args.model, args.batch_size, hvd.size(), device))
    print("images/sec per rank: %.1f +- %.1f" % (mean, spread))
    print("images/sec total on %d rank(s): %.1f +- %.1f" % (hvd.size(), hvd.size() * mean, hvd.size() * spread))
    sys.stdout.flush()


def train_loop(hvd, state, args, device, timed, save=None):
    """Warm up, then time args.iterations rounds of timed(args.batches_per_iter); shared by both frameworks.
    save(iteration), when given, after each iteration that completes DL_CHECKPOINT_EVERY_STEPS more batches."""
    # every rank names itself: the rank, size and local rank Horovod got from the launcher, and the pod it runs on
    print("horovod_bench: rank %d/%d (local rank %d) on %s" % (hvd.rank(), hvd.size(), hvd.local_rank(), socket.gethostname()))
    sys.stdout.flush()
    if state.iteration == 0:  # a resumed run goes on from its checkpoint
        if hvd.rank() == 0:
            print("warming up: %d batches on %d rank(s)" % (args.warmup_batches, hvd.size()))
            sys.stdout.flush()
        timed(args.warmup_batches)
    while state.iteration < args.iterations:
        seconds = timed(args.batches_per_iter)
        rate = args.batch_size * args.batches_per_iter / seconds
        state.rates.append(rate)
        if hvd.rank() == 0:
            print("iteration %d: %.1f images/sec per rank" % (state.iteration, rate))
            sys.stdout.flush()
        state.iteration += 1
        if args.elastic:
            state.commit()
        done = state.iteration * args.batches_per_iter
        if save and done // EVERY > (done - args.batches_per_iter) // EVERY and state.iteration < args.iterations:
            save(state.iteration)
    report(hvd, state.rates, args, device)


def torch_checkpoints(hvd, torch, model, optimizer):
    """(the iteration to start from, save): rank 0 restores model, optimizer and iteration from
    DL_CHECKPOINT_DIR/checkpoint.pt when there is one (the caller's broadcasts then hand its state to every
    rank), and saves them there; (0, None) without DL_CHECKPOINT_DIR."""
    if not CHECKPOINTS:
        return 0, None
    path = os.path.join(CHECKPOINTS, "checkpoint.pt")
    first = 0
    if hvd.rank() == 0:
        os.makedirs(CHECKPOINTS, exist_ok=True)
        if os.path.exists(path):
            saved = torch.load(path)
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            first = saved["iteration"]
            print("horovod_bench: resumed from iteration %d (%s)" % (first, path))
        else:
            print("horovod_bench: no checkpoint in %s; saving one every %d batches" % (CHECKPOINTS, EVERY))
        sys.stdout.flush()
    first = hvd.broadcast_object(first, root_rank=0)

    def save(iteration):
        if hvd.rank() == 0:  # every rank holds the same state: one copy is the checkpoint
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}
            torch.save(state, path + ".tmp")
            os.replace(path + ".tmp", path)

    return first, save


def run_pytorch(args):
    import torch
    import torch.nn.functional as F
    import torchvision.models
    import horovod.torch as hvd

    hvd.init()
    cuda = torch.cuda.is_available() and not args.no_cuda
    if cuda:
        torch.cuda.set_device(hvd.local_rank())
    else:
        torch.set_num_threads(max(1, cpu_budget() // max(1, hvd.local_size())))
    device = "GPU" if cuda else "CPU"
    model = getattr(torchvision.models, args.model)()
    if cuda:
        model.cuda()
    scale = hvd.local_size() if (args.use_adasum and cuda and hvd.nccl_built()) else hvd.size()
    if args.use_adasum and not cuda:
        scale = 1
    base_lr = 0.01
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr * scale, momentum=0.9)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(), compression=compression,
        op=hvd.Adasum if args.use_adasum else hvd.Average)
    batch = torch.Generator().manual_seed(hvd.rank())  # a resumed rank trains on the batch it had
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=batch)
    target = torch.randint(0, 1000, (args.batch_size,), generator=batch)
    if cuda:
        data, target = data.cuda(), target.cuda()

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def timed(n):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    def train(state):
        train_loop(hvd, state, args, device, timed)

    if args.elastic:
        state = hvd.elastic.TorchState(model=model, optimizer=optimizer, iteration=0, rates=[])

        def on_reset():
            for group in optimizer.param_groups:
                group["lr"] = base_lr * hvd.size()
        state.register_reset_callbacks([on_reset])
        hvd.elastic.run(train)(state)
    else:
        first, save = torch_checkpoints(hvd, torch, model, optimizer)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)

        class State(object):
            iteration = first
            rates = []
        train_loop(hvd, State(), args, device, timed, save if EVERY else None)
        # the same digest on every rank: the allreduced gradients kept the replicas identical
        digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
        print("horovod_bench: rank %d final parameters sha256 %s" % (hvd.rank(), digest))
        sys.stdout.flush()


def run_tensorflow(args):
    import tensorflow as tf
    import horovod.tensorflow as hvd

    hvd.init()
    gpus = [] if args.no_cuda else tf.config.experimental.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    if gpus:
        tf.config.experimental.set_visible_devices(gpus[hvd.local_rank() % len(gpus)], "GPU")
    device = "GPU" if gpus else "CPU"
    model = getattr(tf.keras.applications, args.model)(weights=None)
    base_lr = 0.01
    optimizer = tf.optimizers.SGD(base_lr * hvd.size(), momentum=0.9)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    op = hvd.Adasum if args.use_adasum else hvd.Average
    data = tf.random.uniform([args.batch_size, args.image_size, args.image_size, 3])
    target = tf.random.uniform([args.batch_size, 1], minval=0, maxval=999, dtype=tf.int64)
    loss_fn = tf.losses.SparseCategoricalCrossentropy()

    @tf.function
    def step(first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(target, model(data, training=True))
        tape = hvd.DistributedGradientTape(tape, compression=compression, op=op)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables(), root_rank=0)

    def timed(n):
        t0 = time.perf_counter()
        for _ in range(n):
            step(False)
        float(tf.reduce_sum(model.trainable_variables[0]))  # wait for the device
        return time.perf_counter() - t0

    def train(state):
        train_loop(hvd, state, args, device, timed)

    step(True)
    if args.elastic:
        state = hvd.elastic.TensorFlowKerasState(model, optimizer, iteration=0, rates=[])

        def on_reset():
            optimizer.lr.assign(base_lr * hvd.size())
        state.register_reset_callbacks([on_reset])
        hvd.elastic.run(train)(state)
    else:
        class State(object):
            iteration = 0
            rates = []
        train(State())
        # the same digest on every rank: the allreduced gradients kept the replicas identical
        digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
        print("horovod_bench: rank %d final parameters sha256 %s" % (hvd.rank(), digest))
        sys.stdout.flush()


def main():
    args = parse_args()
    if args.framework == "pytorch":
        run_pytorch(args)
    else:
        run_tensorflow(args)


if __name__ == "__main__":
    main()
