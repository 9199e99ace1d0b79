#!/usr/bin/env python3
"""Cold and warm cost of each local image (dlcharts images), and of pushing it to a fresh local registry.

Each image is built twice in a fresh cache of its own (so "cold" includes the Debian packages and the
wheels downloaded from the package registries; nothing is shared with the machine's cache): first cold,
then again (the no-op: digests verified only). Then it is pushed to a fresh registry (cold push) and
pushed again (every blob already there). The cold digest is compared with the digest of the same image
in the machine's cache ($DLCHARTS_CACHE/images) when that has one: equal digests mean the build is
reproducible across caches (the same mirror state and the same wheels assumed).

Writes build/bench/images.json (raw) and the measured table of section 6 of bench/results.md
(bench/data/06-images.json; the images measured by hand there are kept).

Usage: .venv/bin/python -m bench.images [--images busybox,tensorflow] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import common, model, results

SECTION = "06-images"
TITLE = "Local images: build and push cost (dlcharts images)"
COLUMNS = [
    model.column("image"),
    model.column("reference"),
    model.column("compressed MiB", "{:,.0f}"),
    model.column("unpacked MiB", "{:,.0f}"),
    model.column("cold s (steps)", "{:.0f} ({})", align="left"),
    model.column("warm s", "{:.1f}"),
    model.column("push cold / warm s", "{:.1f} / {:.1f}", align="left"),
    model.column("same digest"),
    model.column("load 1m before → after", "{:.2f} → {:.2f}", align="left"),
]


def _shared_digest(name: str) -> str:
    from dlcharts.images import IMAGES, Builder

    builder = Builder()
    meta = builder.root / "oci" / f"{builder.image_key(IMAGES[name])}.json"
    return str(json.loads(meta.read_text())["digest"]) if meta.is_file() else ""


def main(argv: list[str] | None = None) -> int:
    from dlcharts.host.registry import Registry
    from dlcharts.images import IMAGES, Builder

    parser = argparse.ArgumentParser()
    parser.add_argument("--images", default=",".join(IMAGES))
    parser.add_argument("--report-only", action="store_true", help="section 6 from build/bench/images.json")
    args = parser.parse_args(argv)
    if args.report_only:
        saved = common.saved("images")
        if saved is None:
            raise SystemExit(f"no {common.WORK / 'images.json'}: run `python -m bench.images` first")
        report(saved)
        return 0
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
    data = {"rows": rows, "date": common.now(), "tools": Builder().tool_versions()}
    common.save("images", data)
    report(data)
    return 0


def section(im: dict[str, Any]) -> list[model.Block]:
    """The measured blocks of section 6 from a raw run (build/bench/images.json)."""
    tools = im.get("tools", {})
    rows = []
    for r in im["rows"]:
        steps = ", ".join(
            f"{k} {r['cold_steps'][k]:.0f}" for k in ("rootfs", "wheels", "layer", "oci") if k in r["cold_steps"]
        )
        same = "—" if not r["shared_cache_digest"] else ("yes" if r["shared_cache_digest"] == r["digest"] else "NO")
        rows.append(
            [
                r["image"],
                f"`{r['reference']}` {r['digest'][:19]}",
                r["compressed_bytes"] / common.MiB,
                r["unpacked_bytes"] / common.MiB,
                [r["cold_seconds"], steps],
                r["warm_seconds"],
                [r["push_cold_seconds"], r["push_warm_seconds"]],
                same,
                [r["load_before"]["1m"], r["load_after"]["1m"]],
            ]
        )
    return [
        model.facts(
            "run",
            "`python -m bench.images`",
            [
                ["measured", im.get("date", "?")],
                ["mmdebstrap", tools.get("mmdebstrap", "?")],
                ["umoci", tools.get("umoci", "?")],
                ["pip", tools.get("pip", "?")],
            ],
        ),
        model.table("images", COLUMNS, rows),
    ]


def report(im: dict[str, Any]) -> None:
    model.update(SECTION, section(im), title=TITLE, by="`python -m bench.images`")
    results.write()


if __name__ == "__main__":
    raise SystemExit(main())
