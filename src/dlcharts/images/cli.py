"""`dlcharts images build [NAME...] [--push] [--list]`."""

from __future__ import annotations

import argparse

from dlcharts.images.build import Builder
from dlcharts.images.definitions import IMAGES


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.0f} MiB"


def cmd_images(args: argparse.Namespace) -> int:
    names = args.names or list(IMAGES)
    unknown = [n for n in names if n not in IMAGES]
    if unknown:
        print(f"error: unknown image {', '.join(unknown)}; known: {', '.join(IMAGES)}")
        return 2
    if args.list:
        for name in names:
            image = IMAGES[name]
            print(f"{name}: {image.reference} (Debian {image.suite}, Python {image.python})")
            print(f"  stands for {image.stands_for}")
            if image.differs:
                print(f"  differs: {image.differs}")
        return 0
    registry = None
    if args.push:
        from dlcharts.host.registry import Registry

        registry = Registry(secure=True).start()
    builder = Builder()
    for name in names:
        result = builder.build(IMAGES[name])
        how = f"built {'+'.join(result.built)}" if result.built else "cached (digests verified)"
        print(
            f"{name}: {result.image.reference} {result.digest} {_mib(result.size)} compressed, "
            f"{_mib(result.rootfs_size)} unpacked, {result.seconds:.1f}s, {how}"
        )
        if registry is not None:
            print(f"  pushed {builder.push(result, registry.address, registry.access)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    images = sub.add_parser("images", help="build the local images (Debian + PyPI, no Docker) and push them")
    images.add_argument("action", choices=["build"])
    images.add_argument(
        "names", nargs="*", metavar="NAME", help=f"images to build (default: all of {', '.join(IMAGES)})"
    )
    images.add_argument("--push", action="store_true", help="push to the local registry (started when not running)")
    images.add_argument("--list", action="store_true", help="only list the image definitions")
    images.set_defaults(func=cmd_images)
