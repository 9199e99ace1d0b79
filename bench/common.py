"""Shared pieces of the benchmarks: paths, machine facts, load average, timing, raw results on disk.

Each tool saves what it measured, raw, to build/bench/<part>.json (gitignored: samples, logs, the corpus),
turns it into its section's data in bench/data/ (bench/model.py) and rewrites bench/results.md
(bench/results.py).
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
PLOTS = BENCH / "plots"  # the PNGs results.md shows
WORK = ROOT / "build" / "bench"  # gitignored: corpus, per-part raw JSON, logs
MiB = 1024 * 1024
KUBE_VERSION = "1.35.0"

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


def build_command() -> list[str]:
    """How bench builds binaries: `dlcharts cluster build` (one ``<name> <path>`` line per binary; ``--check``
    builds nothing and fails naming what is missing). The one place bench names it."""
    return [str(Path(sys.executable).with_name("dlcharts")), "cluster", "build"]


def build(*names: str) -> subprocess.CompletedProcess[str]:
    """Build (once, cached) the named binaries: the cluster's (the default group) when no name is given, or e.g.
    ``helm-unittest``."""
    return subprocess.run([*build_command(), *names], cwd=ROOT, capture_output=True, text=True, check=False)


def binaries_built() -> bool:
    """Whether the cluster's binaries are built (``--check`` builds nothing)."""
    return subprocess.run([*build_command(), "--check"], cwd=ROOT, capture_output=True, check=False).returncode == 0


def now() -> str:
    """The time a measurement was taken, as results.md shows it."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def pyplot() -> Any:
    """matplotlib's pyplot drawing to files, or None without the `bench` extra (the numbers are written anyway)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        print(f"bench: no plot ({exc}); install it with: .venv/bin/pip install -e '.[bench]'")
        return None
    PLOTS.mkdir(parents=True, exist_ok=True)
    return plt
