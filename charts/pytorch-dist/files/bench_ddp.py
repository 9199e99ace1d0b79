"""Synthetic-data DDP benchmark shipped by the pytorch-dist chart.

Started by torchrun (which reads the PET_* variables the chart sets), one process per GPU. It trains a
small convolutional network on random images, so it needs no data set and no extra packages, and prints
the throughput of every process and of the whole job, then each rank's final-parameters checksum (equal on
every rank). Exit status 0 means the wiring works end to end: rendezvous, NCCL (or gloo on CPU) all-reduce
across every pod, and the GPUs themselves.

With the chart's checkpoint volume (DL_CHECKPOINT_DIR) it saves the model and optimizer every
DL_CHECKPOINT_EVERY_STEPS steps with torch.distributed.checkpoint (each rank writes its part, into step-<N>/; the
file "latest" names the last complete one) and resumes from the last one when it starts again (a retry):
"bench_ddp: resumed from step N". Each rank's batch is drawn from a generator seeded with its rank, so a resumed
rank trains on the batch it had.
"""
import argparse
import datetime
import hashlib
import os
import shutil
import socket
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

CHECKPOINTS = os.environ.get("DL_CHECKPOINT_DIR", "")
EVERY = int(os.environ.get("DL_CHECKPOINT_EVERY_STEPS") or 0)


def conv_block(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


def build_model(width, classes):
    return nn.Sequential(
        conv_block(3, width), nn.MaxPool2d(2),
        conv_block(width, 2 * width), nn.MaxPool2d(2),
        conv_block(2 * width, 4 * width), nn.MaxPool2d(2),
        conv_block(4 * width, 8 * width),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * width, classes),
    )


def resume(model, optimizer, device):
    """The step of the last complete checkpoint, loaded into model and optimizer on every rank; 0 without one.
    Rank 0 reads "latest" and broadcasts it, so that every rank loads the same step."""
    latest = os.path.join(CHECKPOINTS, "latest")
    found = torch.zeros(1, dtype=torch.int64, device=device)
    if dist.get_rank() == 0 and os.path.exists(latest):
        with open(latest) as f:
            found.fill_(int(f.read()))
    dist.broadcast(found, 0)
    step = int(found.item())
    if step:
        model_state, optim_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optim": optim_state}
        dcp.load(state, checkpoint_id=os.path.join(CHECKPOINTS, f"step-{step}"))
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return step


def save(model, optimizer, step):
    """Every rank writes its part of step-<step>/; once all have (dcp.save returns on every rank after the
    metadata is written), rank 0 points "latest" at it and removes the older ones."""
    model_state, optim_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=os.path.join(CHECKPOINTS, f"step-{step}"))
    if dist.get_rank() == 0:
        latest = os.path.join(CHECKPOINTS, "latest")
        with open(latest + ".tmp", "w") as f:
            f.write(str(step))
        os.replace(latest + ".tmp", latest)
        for name in os.listdir(CHECKPOINTS):
            if name.startswith("step-") and name != f"step-{step}":
                shutil.rmtree(os.path.join(CHECKPOINTS, name), ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="images per process and step")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--amp", action="store_true", help="bfloat16 autocast on GPUs")
    args, unknown = parser.parse_known_args()

    cuda = torch.cuda.is_available()
    # the chart's collectiveTimeoutSeconds: a rank lost mid-step fails the others in minutes, not PyTorch's 30
    timeout = os.environ.get("DL_COLLECTIVE_TIMEOUT_SECONDS")
    kwargs = {"timeout": datetime.timedelta(seconds=int(timeout))} if timeout else {}
    dist.init_process_group("nccl" if cuda else "gloo", **kwargs)
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if rank == 0:
        print(f"bench_ddp: {world} process(es), backend {dist.get_backend()}, "
              f"batch {args.batch_size}/process, image {args.image_size}px, ignored args {unknown}", flush=True)
    print(f"bench_ddp: rank {rank}/{world} on {socket.gethostname()} device {device}", flush=True)

    model = build_model(args.width, 1000).to(device)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = torch.Generator().manual_seed(rank)
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=data).to(device)
    labels = torch.randint(0, 1000, (args.batch_size,), generator=data).to(device)
    first = 0
    if CHECKPOINTS:
        os.makedirs(CHECKPOINTS, exist_ok=True)
        first = resume(model, optimizer, device)
        if rank == 0:
            print(f"bench_ddp: resumed from step {first} ({CHECKPOINTS})" if first else
                  f"bench_ddp: no checkpoint in {CHECKPOINTS}; saving one every {EVERY} steps", flush=True)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp and cuda):
            loss = loss_fn(ddp(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    for _ in range(0 if first else args.warmup_steps):  # a resumed run goes on from its checkpoint
        step()
    sync()
    dist.barrier()
    start = time.perf_counter()
    for i in range(first, args.steps):
        loss = step()
        if rank == 0 and (i + 1) % max(1, args.steps // 10) == 0:
            print(f"bench_ddp: step {i + 1}/{args.steps} loss {loss.item():.3f}", flush=True)
        if CHECKPOINTS and EVERY and (i + 1) % EVERY == 0 and i + 1 < args.steps:
            save(model, optimizer, i + 1)
    sync()
    elapsed = time.perf_counter() - start

    rate = (args.steps - first) * args.batch_size / elapsed
    total = torch.tensor([rate], dtype=torch.float64, device=device)
    dist.all_reduce(total)
    print(f"bench_ddp: rank {rank} throughput {rate:.1f} images/s", flush=True)
    if rank == 0:
        print(f"bench_ddp: total throughput {total.item():.1f} images/s over {world} process(es) "
              f"({total.item() / world:.1f} per process)", flush=True)
    # DDP averages the gradients over every rank, so every rank ends with the same parameters: equal
    # checksums prove that the all-reduce crossed every process.
    digest = hashlib.sha256()
    for tensor in model.parameters():
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    print(f"bench_ddp: rank {rank} final parameters sha256 {digest.hexdigest()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
