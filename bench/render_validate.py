#!/usr/bin/env python3
"""Benchmark: render + validate cost per chart scenario (issue 2), written to bench/results-render-validate.md.

For each scenario: a cold `helm template` (no cache), a cached render (memory), strict schema validation of the
render for one Kubernetes version, and the policies. Validators are warmed first, as a test session would.
Usage: .venv/bin/python bench/render_validate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import time
from pathlib import Path

from dlcharts.helm import find_helm
from dlcharts.policies import run_policies
from dlcharts.render import Renderer
from dlcharts.schemas import validate_objects
from dlcharts.suite import KUBE_VERSIONS, all_scenarios

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results-render-validate.md")
    args = parser.parse_args()
    helm = find_helm()
    version = KUBE_VERSIONS[-1]
    rows = []
    for scenario in all_scenarios(ROOT / "charts"):
        request = scenario.request(version)
        Renderer(helm).ensure_dependencies(scenario.chart)
        cold, rendered = timed(lambda: Renderer(helm).render(request), args.repeat)  # noqa: B023
        warm_renderer = Renderer(helm)
        warm_renderer.render(request)
        cached, _ = timed(lambda: warm_renderer.render(request), args.repeat)  # noqa: B023
        validate_objects(rendered, version)  # compile validators once, as a session does
        schema, _ = timed(lambda: validate_objects(rendered, version), args.repeat)  # noqa: B023
        policy, _ = timed(lambda: run_policies(rendered), args.repeat)  # noqa: B023
        rows.append((scenario.id, len(rendered), cold, cached, schema, policy))
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True,
                         text=True).stdout.strip()  # fmt: skip
    lines = [
        "# Render + validate cost per scenario",
        "",
        f"Machine: {platform.machine()}, {cpu}, {len(__import__('os').sched_getaffinity(0))} cores; "
        f"Python {platform.python_version()}; helm {helm.version}; schemas Kubernetes {version} (strict).",
        f"Command: `.venv/bin/python bench/render_validate.py --repeat {args.repeat}` (median of {args.repeat}).",
        "",
        "| scenario | objects | helm template (cold) ms | cached render ms | schema validation ms | policies ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for sid, n, cold, cached, schema, policy in rows:
        lines.append(f"| {sid} | {n} | {cold * 1e3:.1f} | {cached * 1e3:.3f} | {schema * 1e3:.2f} | {policy * 1e3:.2f} |")
    total_objects = sum(r[1] for r in rows)
    lines += [
        "",
        f"Totals over {len(rows)} scenarios: {total_objects} objects; cold render {sum(r[2] for r in rows):.2f} s, "
        f"validation {sum(r[4] for r in rows) * 1e3:.1f} ms "
        f"({sum(r[4] for r in rows) / max(total_objects, 1) * 1e3:.3f} ms per object), "
        f"policies {sum(r[5] for r in rows) * 1e3:.1f} ms.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
