"""deepspeed-dist's benchmark: a small MLP trained with DeepSpeed on synthetic data (dl-charts).

Every MPI rank runs this file. deepspeed.init_distributed() finds the world through Open MPI (DeepSpeed's MPI
discovery: mpi4py), then deepspeed.initialize() builds the engine from the ds_config the chart passes with
--deepspeed_config (the chart's default: ZeRO stage 2). Every rank prints its world size, rank and host, and at the
end a checksum of the final parameters: with data parallelism every rank must end with the same parameters, so
equal checksums prove the gradients really went through the collectives. Rank 0 prints Katib-style metric lines
(name=value).

With DL_CHECKPOINT_DIR (the chart's checkpoint volume) every rank saves with DeepSpeed's own save_checkpoint (a tag
per save, the step in its client state, ZeRO's partitions written by the rank that holds them) every
DL_CHECKPOINT_EVERY_STEPS steps, and a retried job resumes from the tag in the folder's `latest` file with
load_checkpoint: "ds-bench: resumed from step N". Rank 0 keeps only the newest tag.
"""

import argparse
import hashlib
import os
import shutil
import socket
import time

import deepspeed
import deepspeed.comm as dist
import torch


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hidden", type=int, default=256, help="width of the hidden layers")
    parser.add_argument("--layers", type=int, default=4, help="hidden layers")
    parser.add_argument("--steps", type=int, default=50, help="timed training steps")
    parser.add_argument("--warmup-steps", type=int, default=2, help="untimed steps first")
    parser.add_argument("--seed", type=int, default=1234)
    parser = deepspeed.add_config_arguments(parser)  # --deepspeed, --deepspeed_config
    return parser.parse_args()


def model(hidden: int, layers: int) -> torch.nn.Module:
    blocks: list[torch.nn.Module] = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    return torch.nn.Sequential(*blocks, torch.nn.Linear(hidden, 10))


def checksum(net: torch.nn.Module) -> tuple[str, float]:
    """sha256 of every parameter's bytes (exact equality across ranks) and their sum (readable)."""
    digest = hashlib.sha256()
    total = 0.0
    for p in net.parameters():
        t = p.detach().to("cpu", torch.float32).contiguous()
        digest.update(t.numpy().tobytes())
        total += float(t.double().sum())
    return digest.hexdigest()[:16], total


def restore(engine: deepspeed.DeepSpeedEngine, folder: str | None, every: int) -> int:
    """The step to start from: the one saved in ``folder``'s latest tag (loaded into the engine), else 0."""
    if not folder:
        return 0
    os.makedirs(folder, exist_ok=True)
    loaded, state = engine.load_checkpoint(folder)
    if loaded is None:
        print(f"ds-bench: no checkpoint in {folder}; saving one every {every} steps", flush=True)
        return 0
    print(f"ds-bench: resumed from step {state['step']} ({loaded})", flush=True)
    return int(state["step"])


def save(engine: deepspeed.DeepSpeedEngine, folder: str, step: int, rank: int) -> None:
    """A collective save of ``step``; once every rank has written it, rank 0 removes the older tags."""
    tag = f"step-{step}"
    engine.save_checkpoint(folder, tag=tag, client_state={"step": step})
    if rank == 0:
        for old in os.listdir(folder):
            if old.startswith("step-") and old != tag:
                shutil.rmtree(os.path.join(folder, old), ignore_errors=True)


def main() -> None:
    args = parse_args()
    host = socket.gethostname()
    deepspeed.init_distributed()
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    print(
        f"ds-bench: world size {world}, rank {rank}, local rank {local_rank}, host {host}, "
        f"backend {torch.distributed.get_backend()}, master {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}",
        flush=True,
    )
    torch.manual_seed(args.seed)  # the same initial parameters on every rank
    net = model(args.hidden, args.layers)
    engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())
    batch = engine.train_micro_batch_size_per_gpu()
    stage = engine.zero_optimization_stage()
    if rank == 0:
        print(f"ds-bench: ZeRO stage {stage}, micro batch {batch} per rank, {world} ranks", flush=True)
    folder, every = os.environ.get("DL_CHECKPOINT_DIR"), int(os.environ.get("DL_CHECKPOINT_EVERY_STEPS") or 0)
    total = args.warmup_steps + args.steps
    first = restore(engine, folder, every)
    gen = torch.Generator().manual_seed(args.seed + 1 + rank)  # each rank its own data
    loss_fn = torch.nn.CrossEntropyLoss()
    loss = torch.zeros(())
    started = time.monotonic()
    for step in range(first, total):
        if step == args.warmup_steps:
            started = time.monotonic()
        x = torch.randn(batch, args.hidden, generator=gen)
        y = torch.randint(0, 10, (batch,), generator=gen)
        loss = loss_fn(engine(x), y)
        engine.backward(loss)
        engine.step()
        if rank == 0 and (step == 0 or (step + 1) % 10 == 0):
            print(f"ds-bench: step {step + 1}/{total} loss {loss.item():.4f}", flush=True)
        if folder and every and (step + 1) % every == 0 and step + 1 < total:
            save(engine, folder, step + 1, rank)
    elapsed = time.monotonic() - started
    timed = total - max(first, args.warmup_steps)
    digest, total = checksum(engine.module)
    print(f"ds-bench: rank {rank} on {host} final parameters checksum {digest} sum {total:.6f}", flush=True)
    if rank == 0:
        samples = batch * world * timed / elapsed
        print(f"ds-bench: {samples:.1f} samples/s over {world} ranks ({elapsed:.2f}s for {timed} steps)")
        print(f"loss={loss.item():.6f}")
        print(f"samples_per_second={samples:.2f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
