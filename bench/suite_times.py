#!/usr/bin/env python3
"""Part 5: wall time of each test tier on this machine (one pytest process per row; tests/README.md has the tiers).

Rows: fast-cold and fast (the fast tier in one process on every core, as `make test-fast` runs it, without the
identity and packaging folders, as the issue-7 target counted it; cold and warm), then alone on one core: the
charts' tests (cold: --dlcharts-no-cache, what a fresh CI machine pays; and warm: the on-disk render cache
filled, the second run on a developer's machine), the property tests, the release tests, the examples, and
the cluster tier.

The cluster tier is not in the default list: it takes longer than the rest of `make bench` together, so
`make bench` keeps the last measured cluster row (marked with its date) and
`.venv/bin/python -m bench.suite_times --tiers cluster` measures it again. It runs with
DLCHARTS_CLUSTER_NAME=bench-tests (honoured by tests/cluster/conftest.py; the plugin's `cluster` fixture
always uses the cluster named "dlcharts" and reuses it when one is running). A tier that runs past --timeout
gets SIGINT first, so pytest tears its fixtures (and the clusters they started) down, then SIGKILL.

Writes build/bench/suite_times.json (raw), section 5 of bench/results.md (bench/data/05-test-tiers.json; its
cold `.ci/run` table is kept by hand) and bench/plots/suite.png.

Usage: .venv/bin/python -m bench.suite_times [--tiers fast-cold,fast,charts-cold,charts,properties,release,
       example,cluster] [--report-only]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import time
from typing import Any

from bench import common, model, results

PYTEST = [str(common.ROOT / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"]
# The issue-7 target: the fast tier (then tests/unit, tests/render and tests/properties; identity and packaging
# apart) on every core (pytest-xdist), on a fresh cache (what CI pays) and again with the on-disk render cache
# filled (a developer's second run).
FAST = ["-n", "auto", "tests/fast", "--ignore=tests/fast/identity", "--ignore=tests/fast/packaging"]
TIERS: dict[str, list[str]] = {
    "fast-cold": [*FAST, "--dlcharts-no-cache"],
    "fast": FAST,
    "charts-cold": ["tests/fast/charts", "--dlcharts-no-cache"],
    "charts": ["tests/fast/charts"],
    "properties": ["tests/fast/properties"],
    "release": ["tests/cluster/release"],
    "example": ["examples"],
    "cluster": ["tests/cluster"],
}
# Tiers measured with the on-disk render cache filled: each runs once untimed first, to fill it.
WARM = frozenset({"fast", "charts"})
_SUMMARY = re.compile(r"^=*\s*(.*\d+ (?:passed|failed|error|errors|skipped).*?)\s*=*$", re.MULTILINE)


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
    parser.add_argument("--tiers", default="fast-cold,fast,charts-cold,charts,properties,release,example")
    parser.add_argument("--timeout", type=float, default=1200)
    parser.add_argument("--report-only", action="store_true", help="section 5 from build/bench/suite_times.json")
    args = parser.parse_args(argv)
    if args.report_only:
        saved = common.saved("suite_times")
        if saved is None:
            raise SystemExit(f"no {common.WORK / 'suite_times.json'}: run `python -m bench.suite_times` first")
        report(saved)
        return 0
    wanted = args.tiers.split(",")
    previous = {r["tier"]: r for r in (common.saved("suite_times") or {}).get("rows", [])}
    rows = []
    for name in [*wanted, *[t for t in TIERS if t not in wanted and t in previous]]:
        if name not in wanted:  # not measured this time: keep the last measurement, marked as such
            rows.append({**previous[name], "carried_over": True})
            continue
        if name == "cluster" and not common.binaries_built():
            rows.append({"tier": name, "skipped": "control-plane binaries not built (`make control-plane`)"})
            continue
        rows.append(run_tier(name, args.timeout))
    rows.sort(key=lambda r: list(TIERS).index(r["tier"]))
    common.save("suite_times", {"rows": rows})
    report({"rows": rows})
    return 0


# ----- section 5 of results.md -----------------------------------------------------------------------------

SECTION = "05-test-tiers"
TITLE = "Test-suite wall time per tier"
COLUMNS = [
    model.column("tier"),
    model.column("command"),
    model.column("wall s", "{:.1f}"),
    model.column("result"),
    model.column("load 1m before", "{:.2f}"),
]


def section(st: dict[str, Any]) -> tuple[list[model.Block], list[dict[str, str]]]:
    """Section 5's tier table and targets from a raw run (build/bench/suite_times.json)."""
    rows, by = [], {}
    for r in st["rows"]:
        if "skipped" in r:
            rows.append([r["tier"], "", None, f"skipped: {r['skipped']}", None])
            continue
        by[r["tier"]] = r
        note = f" (measured {r.get('date', 'earlier')}, kept from an earlier run)" if r.get("carried_over") else ""
        rows.append(
            [
                r["tier"],
                f"`{r['command']}`",
                r["seconds"],
                f"{r['summary']} (exit {r['exit']}){note}",
                r["load_before"]["1m"],
            ]
        )
    targets = [
        model.target(
            f"the fast tier under 60 s (identity and packaging apart; every core, {label})",
            f"{by[tier]['seconds']:.0f} s",
            by[tier]["seconds"] < 60,
        )
        for tier, label in (("fast-cold", "fresh render cache"), ("fast", "render cache filled"))
        if tier in by
    ]
    blocks = [model.table("tiers", COLUMNS, rows), model.image("plot", "plots/suite.png", "test tiers")]
    return blocks, targets


def report(st: dict[str, Any]) -> None:
    blocks, targets = section(st)
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.suite_times`", targets=targets)
    results.write()
    plot(st)


def plot(st: dict[str, Any]) -> None:
    rows = [r for r in st["rows"] if "seconds" in r]
    plt = common.pyplot() if rows else None
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(
        [r["tier"] for r in rows],
        [r["seconds"] for r in rows],
        color=["tab:green" if r["exit"] == 0 else "tab:red" for r in rows],
    )
    ax.axhline(60, color="gray", linestyle=":", label="60 s")
    ax.set_ylabel("wall seconds")
    ax.set_title("Test tiers on this machine (red: the tier failed)")
    for i, r in enumerate(rows):
        ax.text(i, r["seconds"], f"{r['seconds']:.0f}", ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    fig.savefig(common.PLOTS / "suite.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
