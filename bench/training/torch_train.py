"""PyTorch side of bench/frameworks.py: DistributedDataParallel (gloo) on synthetic data.

Run by pytorch-dist (`--set-file script=...`, worker=N) under torchrun, one process per pod. DDP is synchronous:
every step all-reduces the gradients of all ranks, so all ranks take the same number of steps; PyTorch has
no built-in asynchronous parameter server. Rank 0 decides when the timed section ends (checked every 10
steps, through one all-reduce of a flag).

Every rank prints one line `fwbench {json}`: its timed batches over its timed wall time.

With --steps N it trains exactly N timed steps instead (the sweep of bench/sweep.py), and rank 0 prints the loss
averaged over the ranks every --log-every steps as Katib's metrics collector reads them: `step=10 loss=2.1`.
"""

import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
from torch import nn


def log(*parts):
    print("fwbench:", *parts, flush=True)


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)
        )

    def forward(self, x):
        return self.classifier(self.features(x))


class WordLSTM(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embedding(tokens))
        return self.decoder(out).flatten(0, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=["lenet", "lstm"], required=True)
    parser.add_argument("--seconds", type=float, default=25, help="length of the timed section")
    parser.add_argument("--steps", type=int, default=0, help="train exactly this many timed steps (0: --seconds)")
    parser.add_argument("--log-every", type=int, default=10, help="with --steps: rank 0 prints step=K loss=X")
    parser.add_argument("--pause", type=float, default=0, help="with --steps: seconds of sleep after each step (a "
                        "trial that lasts long enough for a sweep's test to stop it)")  # fmt: skip
    parser.add_argument("--warmup", type=int, default=10, help="untimed batches")
    parser.add_argument("--batch-size", type=int, default=0, help="0: 64 for lenet, 20 for lstm")
    parser.add_argument("--seq-len", type=int, default=20)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--hidden", type=int, default=200)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1, help="intra- and inter-op threads")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    log(f"rank {rank}/{world} on {socket.gethostname()}, PyTorch {torch.__version__}")
    if args.model == "lenet":
        batch = args.batch_size or 64
        model = LeNet5()
        # learnable: each class adds its own fixed pattern (the same on every rank) to noise
        patterns = torch.rand(10, 1, 28, 28, generator=torch.Generator().manual_seed(0))
        labels = torch.randint(0, 10, (batch,))
        data = 0.5 * torch.rand(batch, 1, 28, 28) + 0.5 * patterns[labels]
    else:
        batch = args.batch_size or 20
        model = WordLSTM(args.vocab, args.hidden, args.layers)
        tokens = torch.randint(0, args.vocab, (batch, args.seq_len + 1))
        data, labels = tokens[:, :-1], tokens[:, 1:].flatten()
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(data), labels)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.time()
    batches = 0
    stop = torch.zeros(1)
    while True:
        loss = step()
        batches += 1
        if args.steps:
            if batches % args.log_every == 0 or batches == args.steps:
                mean = loss.detach().clone()
                dist.all_reduce(mean)
                if rank == 0:
                    print(f"step={batches} loss={float(mean) / world:.6f}", flush=True)
            if batches == args.steps:
                break
            time.sleep(args.pause)
        elif batches % 10 == 0:
            stop.fill_(1.0 if rank == 0 and time.time() - start >= args.seconds else 0.0)
            dist.all_reduce(stop)
            if stop.item() > 0:
                break
    end = time.time()
    result = {
        "framework": "pytorch",
        "version": torch.__version__,
        "model": args.model,
        "mode": "DDP (gloo all-reduce), synchronous",
        "role": "worker",
        "rank": rank,
        "workers": world,
        "batch_size": batch,
        "batches": batches,
        "start": start,
        "end": end,
        "rate": batches / (end - start),
        "loss": float(loss),
        "local_world": int(os.environ.get("LOCAL_WORLD_SIZE", "1")),
    }
    print("fwbench " + json.dumps(result), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
