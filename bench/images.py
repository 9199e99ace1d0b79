#!/usr/bin/env python3
"""Cold and warm cost of each local image (dlcharts images), and of pushing it to a fresh local registry.

Each image is built twice in a fresh cache of its own (so "cold" includes the Debian packages and the
wheels downloaded from the package registries; nothing is shared with the machine's cache): first cold,
then again (the no-op: digests verified only). Then it is pushed to a fresh registry (cold push) and
pushed again (every blob already there). The cold digest is compared with the digest of the same image
in the machine's cache ($DLCHARTS_CACHE/images) when that has one: equal digests mean the build is
reproducible across caches (the same mirror state and the same wheels assumed).

Usage: .venv/bin/python bench/images.py [--images busybox,tensorflow]   (writes build/bench/images.json)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from dlcharts.cluster.registry import Registry  # noqa: E402
from dlcharts.images import IMAGES, Builder  # noqa: E402


def _shared_digest(name: str) -> str:
    builder = Builder()
    meta = builder.root / "oci" / f"{builder.image_key(IMAGES[name])}.json"
    return str(json.loads(meta.read_text())["digest"]) if meta.is_file() else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", default=",".join(IMAGES))
    args = parser.parse_args(argv)
    rows = []
    for name in args.images.split(","):
        image = IMAGES[name]
        scratch = Path(tempfile.mkdtemp(prefix=f"bench-image-{name}-"))
        try:
            builder = Builder(scratch, say=lambda line: print(line, flush=True))
            load_before = common.load()
            cold = builder.build(image)
            warm = builder.build(image)
            reg = Registry(scratch / "registry")
            address = reg.start().address
            try:
                started = time.monotonic()
                builder.push(cold, address)
                push_cold = time.monotonic() - started
                started = time.monotonic()
                builder.push(cold, address)
                push_warm = time.monotonic() - started
            finally:
                reg.stop()
            shared = _shared_digest(name)
            rows.append(
                {
                    "image": name,
                    "reference": image.reference,
                    "suite": image.suite,
                    "requirements": list(image.requirements),
                    "digest": cold.digest,
                    "compressed_bytes": cold.size,
                    "unpacked_bytes": cold.rootfs_size,
                    "cold_seconds": round(cold.seconds, 1),
                    "cold_steps": cold.step_seconds,
                    "warm_seconds": round(warm.seconds, 2),
                    "warm_built": warm.built,
                    "push_cold_seconds": round(push_cold, 1),
                    "push_warm_seconds": round(push_warm, 2),
                    "shared_cache_digest": shared,
                    "load_before": load_before,
                    "load_after": common.load(),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    common.save(
        "images",
        {"rows": rows, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tools": Builder().tool_versions()},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
