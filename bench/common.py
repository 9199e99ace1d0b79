"""Shared pieces of the benchmarks: paths, machine facts, load average, timing, results on disk.

Each part (validation.py, render_validate.py, scale.py, scheduling.py, suite_times.py) writes its numbers as
JSON to build/bench/<part>.json; report.py turns them into bench/results.md and the PNGs beside it.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
WORK = ROOT / "build" / "bench"  # gitignored: corpus, per-part JSON, logs
KUBE_VERSION = "1.35.0"
TRAINING_CHARTS = ("tensorflow-dist", "pytorch-dist", "mxnet-dist", "horovod-mpi", "cntk-dist")

T = TypeVar("T")


def load() -> dict[str, float]:
    """The 1/5/15-minute load averages, recorded next to every number (2 shared cores)."""
    one, five, fifteen = os.getloadavg()
    return {"1m": round(one, 2), "5m": round(five, 2), "15m": round(fifteen, 2)}


def load_text(sample: dict[str, float]) -> str:
    return f"{sample['1m']:.2f} / {sample['5m']:.2f} / {sample['15m']:.2f}"


def timed(fn: Callable[[], T], repeat: int) -> tuple[list[float], T]:
    """Run ``fn`` ``repeat`` times; every wall-clock sample in seconds and the last result."""
    samples: list[float] = []
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return samples, result


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def save(part: str, data: dict[str, Any]) -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{part}.json"
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    return path


def saved(part: str) -> dict[str, Any] | None:
    path = WORK / f"{part}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def helm_path(version: str = "v4.3.1") -> Path:
    return ROOT / ".tools" / f"helm-{version}" / "helm"


def _pkg(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False).stdout.strip()
    except OSError:
        return "unavailable"


def machine() -> dict[str, Any]:
    """What the numbers were taken on."""
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    helm4 = _run([str(helm_path("v4.3.1")), "version", "--short"])
    helm3 = _run([str(helm_path("v3.18.0")), "version", "--short"])
    go = shutil.which("go") or "/usr/local/go/bin/go"
    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "helm4": helm4,
        "helm3": helm3,
        "go": re.sub(r"^go version ", "", _run([go, "version"])),
        "packages": {
            p: _pkg(p) for p in ("jsonschema", "jsonschema-rs", "kubernetes-validate", "pyyaml", "matplotlib")
        },
        "argv": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def write_between(begin: str, end: str, lines: list[str], heading: str = "") -> bool:
    """Replace the text between the markers ``begin`` and ``end`` in bench/results.md with ``lines`` (markers
    included, as ``lines`` must start and end with them); without the markers, append ``heading`` and ``lines``
    at the end. The text around them is kept (results.md has hand-written parts)."""
    path = BENCH / "results.md"
    text = path.read_text()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        path.write_text(head + "\n".join(lines) + tail)
        return True
    if not heading:
        return False
    path.write_text(text.rstrip() + "\n\n" + heading + "\n\n" + "\n".join(lines) + "\n")
    return True


def replace_section(number: str, lines: list[str]) -> None:
    """Replace section ``## <number>.`` of bench/results.md (up to the next ``## `` heading) with ``lines``."""
    path = BENCH / "results.md"
    text = path.read_text()
    start = text.index(f"\n## {number}. ") + 1
    following = text.find("\n## ", start)
    path.write_text(text[:start] + "\n".join(lines).rstrip() + "\n" + (text[following:] if following >= 0 else ""))
