"""Synthetic-data CNTK benchmark shipped by the cntk-dist chart (dl-charts).

Every MPI rank trains a fully connected network on one fixed random minibatch with a CNTK distributed
learner: data-parallel SGD (32-bit, or 1-bit SGD with --gradient-bits 1) or block momentum (BMUF).
Rank 0 prints samples/sec per rank and for the whole job. Python 3.5 compatible (CNTK 2.7 images).
"""
import argparse
import os
import sys
import time

import numpy as np
import cntk as C
from cntk.train.distributed import (Communicator, block_momentum_distributed_learner,
                                    data_parallel_distributed_learner)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--method", choices=["dataParallel", "blockMomentum"], default="dataParallel")
    p.add_argument("--gradient-bits", type=int, default=None, help="1 = 1-bit SGD; default 32")
    p.add_argument("--distributed-after", type=int, default=0, help="samples before training goes parallel")
    p.add_argument("--block-size", type=int, default=None, help="block momentum: samples per block")
    p.add_argument("--block-momentum-as-time-constant", type=float, default=None)
    p.add_argument("--input-dim", type=int, default=1024)
    p.add_argument("--hidden-dim", type=int, default=2048)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=256, help="samples per rank and minibatch")
    p.add_argument("--warmup", type=int, default=20, help="untimed minibatches")
    p.add_argument("--iterations", type=int, default=200, help="timed minibatches")
    p.add_argument("--cpu", action="store_true", help="train on CPUs even if GPUs are visible")
    return p.parse_args()


def pick_device(args):
    local = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK") or os.environ.get("MPI_LOCALRANKID") or "0"
    gpus = [d for d in C.device.all_devices() if d.type() == C.device.DeviceKind.GPU]
    if gpus and not args.cpu:
        C.device.try_set_default_device(C.device.gpu(int(local) % len(gpus)))
        return "GPU %d" % (int(local) % len(gpus))
    C.device.try_set_default_device(C.device.cpu())
    return "CPU"


def main():
    args = parse_args()
    device = pick_device(args)
    rank, workers = Communicator.rank(), Communicator.num_workers()

    x = C.input_variable(args.input_dim)
    y = C.input_variable(args.classes)
    h = x
    for _ in range(args.layers):
        h = C.layers.Dense(args.hidden_dim, activation=C.relu)(h)
    z = C.layers.Dense(args.classes)(h)
    loss = C.cross_entropy_with_softmax(z, y)
    error = C.classification_error(z, y)
    learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.01), C.momentum_schedule(0.9))

    if args.method == "blockMomentum":
        block = args.block_size or args.batch_size * workers * 4
        extra = {}
        if args.block_momentum_as_time_constant is not None:
            extra["block_momentum_as_time_constant"] = args.block_momentum_as_time_constant
        distributed = block_momentum_distributed_learner(
            learner, block_size=block, distributed_after=args.distributed_after, **extra)
        what = "block momentum (block size %d samples)" % block
    else:
        bits = args.gradient_bits or 32
        distributed = data_parallel_distributed_learner(
            learner, distributed_after=args.distributed_after, num_quantization_bits=bits)
        what = "data-parallel SGD, %d-bit gradients%s" % (bits, " (1-bit SGD)" if bits == 1 else "")
    trainer = C.Trainer(z, (loss, error), [distributed])

    rng = np.random.RandomState(rank)
    features = rng.rand(args.batch_size, args.input_dim).astype(np.float32)
    labels = np.eye(args.classes, dtype=np.float32)[rng.randint(0, args.classes, args.batch_size)]
    batch = {x: features, y: labels}

    if rank == 0:
        print("CNTK %s: %d rank(s), %s; rank 0 on %s" % (C.__version__, workers, what, device))
        sys.stdout.flush()
    for _ in range(args.warmup):
        trainer.train_minibatch(batch)
    trainer.previous_minibatch_loss_average  # wait for the device
    start = time.time()
    for _ in range(args.iterations):
        trainer.train_minibatch(batch)
    last_loss = trainer.previous_minibatch_loss_average
    seconds = time.time() - start
    rate = args.batch_size * args.iterations / seconds
    if rank == 0:
        print("samples/sec per rank: %.1f (loss %.4f)" % (rate, last_loss))
        print("samples/sec total on %d rank(s): %.1f" % (workers, rate * workers))
        sys.stdout.flush()
    Communicator.finalize()


if __name__ == "__main__":
    main()
