#!/usr/bin/env python3
"""Part 5: wall time of each test tier on this machine, as CI runs it (one pytest process per tier).

Tiers: fast-cold and fast (unit + render + properties in one process on every core, as `make test` runs them;
cold and warm), then each tier alone on one core: unit, render (cold: --dlcharts-no-cache, what a fresh CI
machine pays; and warm: the on-disk render cache filled, the second run on a developer's machine), properties,
repo, example, and cluster.

The cluster tier is not in the default list: it takes longer than the rest of `make bench` together (over
10 minutes on this machine), so `make bench` keeps the last measured cluster row (marked with its date) and
`.venv/bin/python bench/suite_times.py --tiers cluster` measures it again. It runs with
DLCHARTS_CLUSTER_NAME=bench-tests (honoured by tests/cluster/conftest.py; the plugin's `cluster` fixture
always uses the cluster named "dlcharts" and reuses it when one is running). A tier that runs past --timeout
gets SIGINT first, so pytest tears its fixtures (and the clusters they started) down, then SIGKILL.

Usage: .venv/bin/python bench/suite_times.py [--tiers fast-cold,fast,unit,render-cold,render,properties,repo,
       example,cluster]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

PYTEST = [str(common.ROOT / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"]
# The issue-7 target: unit + render + properties together, as `make test` runs them (pytest-xdist on every core),
# on a fresh cache (what CI pays) and again with the on-disk render cache filled (a developer's second run).
FAST = ["-n", "auto", "tests/unit", "tests/render", "tests/properties"]
TIERS: dict[str, list[str]] = {
    "fast-cold": [*FAST, "--dlcharts-no-cache"],
    "fast": FAST,
    "unit": ["tests/unit"],
    "render-cold": ["tests/render", "--dlcharts-no-cache"],
    "render": ["tests/render"],
    "properties": ["tests/properties"],
    "repo": ["tests/repo"],
    "example": ["examples"],
    "cluster": ["tests/cluster"],
}
# Tiers measured with the on-disk render cache filled: each runs once untimed first, to fill it.
WARM = frozenset({"fast", "render"})
_SUMMARY = re.compile(r"^=*\s*(.*\d+ (?:passed|failed|error|errors|skipped).*?)\s*=*$", re.MULTILINE)


def binaries_built() -> bool:
    script = common.ROOT / "ci" / "build-control-plane.sh"
    if not script.is_file():
        return False
    return subprocess.run(["bash", str(script), "--check"], capture_output=True, check=False).returncode == 0


def run_tier(name: str, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "DLCHARTS_CLUSTER_NAME": "bench-tests"}
    if name in WARM:
        subprocess.run([*PYTEST, *TIERS[name]], capture_output=True, cwd=common.ROOT, env=env, check=False)
    load = common.load()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*PYTEST, *TIERS[name]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=common.ROOT,
        env=env,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # pytest runs its teardowns on KeyboardInterrupt
        try:
            out, _ = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        timed_out = True
    seconds = time.perf_counter() - start
    found = _SUMMARY.findall(out or "")
    lines = (out or "").strip().splitlines()
    summary = found[-1] if found else (lines[-1] if lines else "(no output)")
    if timed_out:
        summary = f"stopped after {timeout:.0f} s; {summary}"
    print(f"suite_times: {name}: {seconds:.1f}s, {summary}", flush=True)
    return {"tier": name, "command": " ".join([".venv/bin/pytest", *PYTEST[1:], *TIERS[name]]),
            "seconds": seconds, "exit": proc.returncode, "summary": summary, "load_before": load,
            "timed_out": timed_out, "date": time.strftime("%Y-%m-%d %H:%M")}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tiers", default="fast-cold,fast,unit,render-cold,render,properties,repo,example")
    parser.add_argument("--timeout", type=float, default=1200)
    args = parser.parse_args(argv)
    wanted = args.tiers.split(",")
    previous = {r["tier"]: r for r in (common.saved("suite_times") or {}).get("rows", [])}
    rows = []
    for name in [*wanted, *[t for t in TIERS if t not in wanted and t in previous]]:
        if name not in wanted:  # not measured this time: keep the last measurement, marked as such
            rows.append({**previous[name], "carried_over": True})
            continue
        if name == "cluster" and not binaries_built():
            rows.append({"tier": name, "skipped": "control-plane binaries not built (ci/build-control-plane.sh)"})
            continue
        rows.append(run_tier(name, args.timeout))
    rows.sort(key=lambda r: list(TIERS).index(r["tier"]))
    common.save("suite_times", {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
