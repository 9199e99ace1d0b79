#!/usr/bin/env python3
"""Part 2: render + validate cost per chart scenario (Kubernetes 1.35.0, strict schemas).

For each scenario: a cold render (no cache; by the in-process renderer where it runs, see bench/renderers.py),
a render served from the Renderer's memory cache, one served from its disk cache (a fresh Renderer reading the cached
manifest: what a second test run pays), strict schema validation (validators compiled once, as in a test
session) and the policies. Medians of --repeat.

Writes build/bench/render_validate.json (raw) and section 2 of bench/results.md (bench/data/02-render-validate.json).

Usage: .venv/bin/python -m bench.render_validate [--repeat N] [--report-only]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from bench import common, model, results

SECTION = "02-render-validate"
TITLE = "Render + validate per scenario"
COLUMNS = [
    model.column("scenario"),
    model.column("objects", "{:,}"),
    model.column("cold ms", "{:.0f}"),
    model.column("memory cache ms", "{:.2f}"),
    model.column("disk cache ms", "{:.2f}"),
    model.column("schema validation ms", "{:.2f}"),
    model.column("policies ms", "{:.2f}"),
    model.column("load 1m", "{:.2f}"),
]


def measure(repeat: int) -> dict[str, Any]:
    from dlcharts.helm import find_helm
    from dlcharts.policies import run_policies
    from dlcharts.render import Renderer
    from dlcharts.schemas import validate_objects
    from dlcharts.suite import KUBE_VERSIONS, all_scenarios

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
    from dlcharts import render_server

    renderer = render_server.describe(helm).removeprefix("renderer: ")
    return {"rows": rows, "repeat": repeat, "kube_version": version, "helm": helm.version, "renderer": renderer}


def section(data: dict[str, Any]) -> list[model.Block]:
    """Section 2's blocks from a raw run (build/bench/render_validate.json)."""
    rows = data["rows"]
    objects = sum(r["objects"] for r in rows)
    schema = sum(r["schema"] for r in rows)
    return [
        model.facts(
            "setup",
            "setup",
            [
                ["Kubernetes", data["kube_version"]],
                ["helm", data["helm"]],
                ["runs per number shown (their median)", data["repeat"], "{}"],
                ["cold render by", data.get("renderer", "one helm process per render")],
            ],
        ),
        model.table(
            "scenarios",
            COLUMNS,
            [
                [
                    r["scenario"],
                    r["objects"],
                    r["cold"] * 1e3,
                    r["memory"] * 1e3,
                    r["disk"] * 1e3,
                    r["schema"] * 1e3,
                    r["policies"] * 1e3,
                    r["load_1m"],
                ]
                for r in rows
            ],
        ),
        model.facts(
            "totals",
            "totals",
            [
                ["scenarios", len(rows), "{:,}"],
                ["objects", objects, "{:,}"],
                ["cold renders, s", sum(r["cold"] for r in rows), "{:.2f}"],
                ["memory-cached renders, ms", sum(r["memory"] for r in rows) * 1e3, "{:.1f}"],
                ["disk-cached renders, ms", sum(r["disk"] for r in rows) * 1e3, "{:.1f}"],
                ["schema validation, ms", schema * 1e3, "{:.1f}"],
                ["schema validation per object, µs", schema / max(objects, 1) * 1e6, "{:.0f}"],
                ["policies, ms", sum(r["policies"] for r in rows) * 1e3, "{:.1f}"],
            ],
        ),
    ]


def report(data: dict[str, Any]) -> None:
    model.update(SECTION, section(data), title=TITLE, by="`python -m bench.render_validate`")
    results.write()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--report-only", action="store_true", help="section 2 from build/bench/render_validate.json")
    args = parser.parse_args(argv)
    data = common.saved("render_validate") if args.report_only else measure(args.repeat)
    if data is None:
        raise SystemExit(f"no {common.WORK / 'render_validate.json'}: run `python -m bench.render_validate` first")
    if not args.report_only:
        common.save("render_validate", data)
    report(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
