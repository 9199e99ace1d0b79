"""bench/results.md's section "GPU: ours vs bare" from a run's gpu.json (`python -m bench.gpu report FILE`), or,
without one, the section that says the run is pending."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import model, results

SECTION = "18-gpu"
TITLE = "GPU: ours vs bare (issue 46)"
BY = "`python -m bench.gpu report`"
COMMAND = [
    "python -m bench.gpu prepare           # here, with helm: build/bench/gpu-plan/plan.json",
    "bash bench/gpu/device.sh              # the device machine (carry build/bench/gpu-plan): $OUT/gpu.json",
    "python -m bench.gpu report gpu.json   # here: this section",
]
COLUMNS = [
    model.column("case"),
    model.column("GPU"),
    model.column("ours samples/s", "{:,.1f}"),
    model.column("bare samples/s", "{:,.1f}"),
    model.column("ours / bare", "{:.3f}"),
    model.column("ours first step s", "{:.1f}"),
    model.column("bare first step s", "{:.1f}"),
    model.column("status"),
]
SEEDS = (
    "189 images/s: ResNet-101, synthetic data, 2x V100 (the seeds' figure, issue 46; precision and batch not stated)"
)


def rows(run: dict[str, Any]) -> list[list[Any]]:
    gpu = run["machine"]["gpu"].split(",")[0]
    by_case: dict[str, dict[str, dict[str, Any]]] = {}
    for row in run["rows"]:
        by_case.setdefault(row["id"], {})[row["how"]] = row
    out = []
    for case, hows in by_case.items():
        ours, bare = hows.get("ours", hows.get("both", {})), hows.get("bare", {})
        rate, base = ours.get("samples_per_s"), bare.get("samples_per_s")
        status = "; ".join(sorted({r["status"] for r in hows.values()}))
        unit = f" ({ours['unit']}/s)" if ours.get("unit") else ""
        out.append([case + unit, gpu, rate, base, rate / base if rate and base else None,
                    ours.get("first_step_s"), bare.get("first_step_s"), status])  # fmt: skip
    return out


def blocks(run: dict[str, Any] | None) -> list[model.Block]:
    if run is None:
        status = [
            ["status", "pending: no device lent yet; the command and its CPU test are in place"],
            ["seeds", SEEDS],
        ]
        return [
            model.facts("run", "GPU run", status),
            model.table("cases", COLUMNS, []),
            model.code("command", COMMAND),
        ]
    machine = run["machine"]
    facts = [
        ["GPU (name, driver, memory)", machine["gpu"]],
        ["python", machine["python"]],
        *[[name, version] for name, version in machine["versions"].items()],
        [
            "plan made from",
            f"{run['plan']['commit']} ({run['plan']['changed_files']} changed files), helm {run['helm']}",
        ],
        ["seeds", SEEDS],
        ["what differs from the seeds", "one GPU, not two; an H100/H200, not a V100; float32 with TF32 convolutions"],
    ]
    caption = "Each case twice on one GPU: ours (the pod's command, environment and script from the render) and bare."
    return [model.facts("run", "GPU run", facts), model.table("cases", COLUMNS, rows(run), caption),
            model.code("command", COMMAND)]  # fmt: skip


def write(path: Path | None) -> Path:
    run = json.loads(path.read_text()) if path else None
    if run is not None and run.get("cpu"):
        raise SystemExit(f"bench.gpu: {path} is a --cpu run; the section shows GPU runs only")
    model.update(SECTION, blocks(run), title=TITLE, by=BY)
    return results.write()
