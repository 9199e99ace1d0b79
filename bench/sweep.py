#!/usr/bin/env python3
"""The Kubeflow-on-GPU talk's Katib experiment, redone on CPU through `dlcharts sweep` (issue 35).

bench/sweeps/lenet.yaml: the learning rate (log range) and batch size of bench/frameworks' LeNet-5 on pytorch-dist,
2 workers per trial, parallelTrials 3, maxTrials 12, maxFailedTrials 3, the median stopping rule; run with the
random algorithm, then with TPE (optuna), one after the other on the embedded cluster's real node(s). Each trial
trains 60 steps and reports the loss averaged over the ranks every 5 steps (bench/training/torch_train.py --steps).

Records per algorithm: the wall time, the trials by state, the best trial and its loss, and the plot of every
trial's loss over steps (bench/plots/sweep-<algorithm>.png); section 17 of bench/results.md.

Usage: .venv/bin/python -m bench.sweep [--algorithms random,tpe] [--cluster-name NAME]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench import common, model
from dlcharts.helm import find_helm
from dlcharts.jobs import sweep

SECTION = "17-sweeps"
TITLE = "Sweeps without an operator: the talk's Katib experiment on CPU (issue 35)"
SWEEP = common.BENCH / "sweeps" / "lenet.yaml"
CHART = common.ROOT / "charts" / "pytorch-dist"
HELM_ARGS = ["--set", "worker=2", "--set-file", f"script={common.BENCH / 'training' / 'torch_train.py'}"]
COLUMNS = [
    model.column("algorithm"),
    model.column("trials", "{:,}"),
    model.column("succeeded / stopped early / failed", "{} / {} / {}"),
    model.column("wall", "{:.0f} s"),
    model.column("best trial", align="left"),
    model.column("best loss", "{:.4f}"),
    model.column("median loss of the completed", "{:.4f}"),
]


def one(algorithm: str, cluster: str, out: Path) -> list[object]:
    spec = yaml.safe_load(SWEEP.read_text())
    spec.update(algorithm=algorithm, name=f"lenet-{algorithm}")
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / f"lenet-{algorithm}.yaml"
        file.write_text(yaml.safe_dump(spec, sort_keys=False))
        shutil.rmtree(out, ignore_errors=True)
        started = time.monotonic()
        code = sweep.sweep_main(CHART, file, HELM_ARGS, helm=find_helm(), namespace=f"bench-sweep-{algorithm}",
                                out=out, cluster_name=cluster)  # fmt: skip
        wall = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"bench.sweep: the {algorithm} sweep ended with {code}; see {out}")
    state = json.loads((out / "state.json").read_text())
    trials = state["trials"]
    counts = [sum(1 for t in trials if t["state"] == s) for s in ("Succeeded", "EarlyStopped", "Failed")]
    scored = sorted((t for t in trials if t["state"] == "Succeeded" and t["value"] is not None),
                    key=lambda t: t["value"])  # fmt: skip
    best = scored[0]
    median = statistics.median(t["value"] for t in scored)
    params = ", ".join(f"{k}={sweep.value_text(v)}" for k, v in best["params"].items())
    if (out / "loss.png").is_file():
        common.PLOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / "loss.png", common.PLOTS / f"sweep-{algorithm}.png")
    return [algorithm, len(trials), counts, wall, f"{best['index']}: {params}", best["value"], median]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algorithms", default="random,tpe")
    parser.add_argument("--cluster-name", default="dlcharts")
    args = parser.parse_args(argv)
    rows = []
    for algorithm in args.algorithms.split(","):
        rows.append(one(algorithm, args.cluster_name, common.ROOT / "build" / "bench" / f"sweep-{algorithm}"))
        print(rows[-1])
    old = model.load(model.path_of(SECTION)) if model.path_of(SECTION).is_file() else {"blocks": []}
    kept = next((b["rows"] for b in old["blocks"] if b.get("id") == "sweeps"), [])
    blocks = [
        model.facts(
            "setup",
            "setup",
            [
                ["sweep file", "bench/sweeps/lenet.yaml"],
                ["chart", "pytorch-dist, worker=2 per trial (DDP, gloo)"],
                ["trial", "LeNet-5, 60 steps, loss averaged over ranks every 5 steps"],
                [
                    "limits",
                    "parallelTrials 3, maxTrials 12, maxFailedTrials 3, median rule from step 20 after 3 trials",
                ],
                ["measured", common.now()],
            ],
        ),  # fmt: skip
        model.table("sweeps", COLUMNS, model.merge_rows(kept, rows, 1)),
        *[model.image(f"plot-{r[0]}", f"plots/sweep-{r[0]}.png", f"loss per step of every {r[0]} trial") for r in rows],
    ]
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.sweep`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
