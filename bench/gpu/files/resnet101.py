"""ResNet-101 on synthetic images, for bench.gpu (issue 46): a figure to set beside the seeds' 189 images/s on 2xV100.

Run two ways by `python -m bench.gpu run`: by the pytorch-dist chart as its own program (`--set-file script=...`, so
torchrun starts it with the chart's PET_* variables, as a pod would), and bare with `torchrun --standalone`.
Self-contained: the network is defined here (He et al. 2016, bottleneck blocks 3-4-23-3, the stride on the 3x3
convolution as torchvision builds it: 44,549,160 parameters with 1000 classes), so no torchvision is needed.
`--blocks 1,1,1,1 --width 8` makes a tiny one for the CPU test.

Prints what bench.gpu reads: "resnet: step N/M ..." and "resnet: total throughput X images/s ...".
"""

import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
from torch import nn


class Bottleneck(nn.Module):
    """1x1 down to ``width``, 3x3 (strided), 1x1 up to 4 x ``width``, added to the (projected) input."""

    def __init__(self, c_in, width, stride):
        super().__init__()
        c_out = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(c_in, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        same = stride == 1 and c_in == c_out
        self.skip = (
            nn.Identity()
            if same
            else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + self.skip(x))


def resnet(blocks, width=64, classes=1000):
    layers = [
        nn.Conv2d(3, width, 7, 2, 3, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    c_in = width
    for stage, count in enumerate(blocks):
        for i in range(count):
            layers.append(Bottleneck(c_in, width * 2**stage, 2 if i == 0 and stage else 1))
            c_in = 4 * width * 2**stage
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, classes))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", default="3,4,23,3", help="bottleneck blocks per stage (3,4,23,3: ResNet-101)")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64, help="images per process and step")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--amp", action="store_true", help="bfloat16 autocast on GPUs (default: float32)")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    timeout = os.environ.get("DL_COLLECTIVE_TIMEOUT_SECONDS")  # the chart's; none when bare
    dist.init_process_group(
        "nccl" if cuda else "gloo", **({"timeout": datetime.timedelta(seconds=int(timeout))} if timeout else {})
    )
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True  # fixed shapes: let cuDNN pick its fastest kernels in the warm-up
    # channels-last is the layout tensor cores want; on CPU it changes nothing that matters here
    layout = torch.channels_last if cuda else torch.contiguous_format
    model = resnet([int(b) for b in args.blocks.split(",")], args.width).to(device, memory_format=layout)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size).to(device, memory_format=layout)
    labels = torch.randint(0, 1000, (args.batch_size,)).to(device)
    precision = "float32 (TF32 convolutions: PyTorch's default)" if cuda else "float32"
    if args.amp and cuda:
        precision = "bfloat16 autocast"
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(
            f"resnet: blocks {args.blocks}, {params:,} parameters, {world} process(es), device {device}, "
            f"batch {args.batch_size}/process, image {args.image_size}px, {precision}",
            flush=True,
        )

    start = None
    for i in range(-args.warmup_steps, args.steps):  # negative: the untimed warm-up
        if i == 0:  # the clock starts once every rank has warmed up and the GPU has caught up
            if cuda:
                torch.cuda.synchronize(device)
            dist.barrier()
            start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.amp and cuda):
            loss = loss_fn(ddp(images), labels)
        loss.backward()
        optimizer.step()
        if rank == 0 and i >= 0 and (i + 1) % max(1, args.steps // 5) == 0:
            print(f"resnet: step {i + 1}/{args.steps} loss {loss.item():.3f}", flush=True)
    if cuda:
        torch.cuda.synchronize(device)
    rate = args.steps * args.batch_size / (time.perf_counter() - start)
    total = torch.tensor([rate], dtype=torch.float64, device=device)
    dist.all_reduce(total)
    if rank == 0:
        print(f"resnet: total throughput {total.item():.1f} images/s over {world} process(es)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
