#!/usr/bin/env python3
"""Part 2: render + validate cost per chart scenario (Kubernetes 1.35.0, strict schemas).

For each scenario: a cold render (no cache; by the in-process renderer where it runs, see bench/renderers.py),
a render served from the Renderer's memory cache, one served from its disk cache (a fresh Renderer reading the cached
manifest: what a second test run pays), strict schema validation (validators compiled once, as in a test
session) and the policies. Medians of --repeat.

(Why the PyPI helm-python-sdk is not the in-process renderer: bench/results.md, "In-process rendering".)

Usage: .venv/bin/python bench/render_validate.py [--repeat N] [--out bench/results-render-validate.md]
       (run by bench/run.py with --json-only, which writes build/bench/render_validate.json instead)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from dlcharts import render_server  # noqa: E402
from dlcharts.helm import find_helm  # noqa: E402
from dlcharts.policies import run_policies  # noqa: E402
from dlcharts.render import Renderer  # noqa: E402
from dlcharts.schemas import validate_objects  # noqa: E402
from dlcharts.suite import KUBE_VERSIONS, all_scenarios  # noqa: E402


def measure(repeat: int) -> dict[str, Any]:
    helm = find_helm()
    version = KUBE_VERSIONS[-1]
    rows = []
    with tempfile.TemporaryDirectory(prefix="dlcharts-bench-") as tmp:
        for scenario in all_scenarios(common.ROOT / "charts"):
            request = scenario.request(version)
            Renderer(helm).ensure_dependencies(scenario.chart)
            load = common.load()["1m"]
            cold, rendered = common.timed(lambda: Renderer(helm).render(request), repeat)  # noqa: B023
            warm = Renderer(helm)
            warm.render(request)
            memory, _ = common.timed(lambda: warm.render(request), repeat)  # noqa: B023
            disk_dir = Path(tmp) / scenario.id.replace("/", "_")
            Renderer(helm, cache_dir=disk_dir).render(request)
            disk, _ = common.timed(lambda: Renderer(helm, cache_dir=disk_dir).render(request), repeat)  # noqa: B023
            validate_objects(rendered, version)  # compile validators once, as a session does
            schema, findings = common.timed(lambda: validate_objects(rendered, version), repeat)  # noqa: B023
            policy, _ = common.timed(lambda: run_policies(rendered), repeat)  # noqa: B023
            rows.append(
                {
                    "scenario": scenario.id,
                    "objects": len(rendered),
                    "bytes": len(rendered.text.encode()),
                    "cold": common.median(cold),
                    "memory": common.median(memory),
                    "disk": common.median(disk),
                    "schema": common.median(schema),
                    "policies": common.median(policy),
                    "findings": len(findings),
                    "load_1m": load,
                }
            )
            print(f"render_validate: {scenario.id}: cold {common.median(cold) * 1e3:.0f} ms", flush=True)
    renderer = render_server.describe(helm).removeprefix("renderer: ")
    return {"rows": rows, "repeat": repeat, "kube_version": version, "helm": helm.version, "renderer": renderer}


def table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| scenario | objects | cold: helm process ms | memory cache ms | disk cache ms | schema validation ms "
        "| policies ms | load 1m |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['scenario']} | {r['objects']} | {r['cold'] * 1e3:.0f} | {r['memory'] * 1e3:.2f} | "
            f"{r['disk'] * 1e3:.2f} | {r['schema'] * 1e3:.2f} | {r['policies'] * 1e3:.2f} | {r['load_1m']:.2f} |"
        )
    rows = data["rows"]
    objects = sum(r["objects"] for r in rows)
    lines += [
        "",
        f"Totals over {len(rows)} scenarios ({objects} objects): cold renders {sum(r['cold'] for r in rows):.2f} s, "
        f"memory-cached {sum(r['memory'] for r in rows) * 1e3:.1f} ms, disk-cached "
        f"{sum(r['disk'] for r in rows) * 1e3:.1f} ms, schema validation {sum(r['schema'] for r in rows) * 1e3:.1f} ms "
        f"({sum(r['schema'] for r in rows) / max(objects, 1) * 1e6:.0f} µs per object), policies "
        f"{sum(r['policies'] for r in rows) * 1e3:.1f} ms.",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=common.BENCH / "results-render-validate.md")
    parser.add_argument("--json-only", action="store_true", help="write build/bench/render_validate.json only")
    args = parser.parse_args()
    data = measure(args.repeat)
    common.save("render_validate", data)
    if args.json_only:
        return 0
    info = common.machine()
    lines = [
        "# Render + validate cost per scenario",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores; Python {info['python']}; helm {data['helm']}; "
        f"schemas Kubernetes {data['kube_version']} (strict).",
        f"Command: `.venv/bin/python bench/render_validate.py --repeat {args.repeat}` (median of {args.repeat}).",
        "",
        *table(data),
        "",
    ]
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
