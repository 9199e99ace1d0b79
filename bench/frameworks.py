#!/usr/bin/env python3
"""The inovex talk's framework comparison, redone through our charts on the embedded cluster's real node (CPU).

For each framework x model x worker count, one `dlcharts run`-style job (dlcharts.jobs.run.run_job: local image,
CPU values, real node) runs the framework's program from bench/training/ through the chart's `script` value:

  tensorflow  tensorflow-dist  chief=1, ps=1, worker=N; ParameterServerStrategy + ClusterCoordinator (async)
  mxnet       mxnet-dist       scheduler, server=1, worker=N; Gluon with kvstore dist_async (async)
  pytorch     pytorch-dist     worker=N under torchrun; DistributedDataParallel with gloo (SYNCHRONOUS)

Models (synthetic data of the talk's shapes): LeNet-5 on 1x28x28 images, 10 classes, batch 64; a 2-layer LSTM
with 200 hidden units on word ids (vocabulary 10,000, 20 steps, batch 20: TensorFlow's PTB tutorial, small
config). Every pod is limited to 1 CPU (dlcharts.jobs.run.CPU_DEFAULTS) and every framework to 1 thread per process.

Writes every job's numbers to bench/data/raw/frameworks.json (committed: each worker's line, the load around
each job), section 8 of bench/results.md (bench/data/08-frameworks.json) and bench/plots/frameworks.png, and
prints the tables.

Usage: .venv/bin/python -m bench.frameworks [--cluster-name NAME] [--seconds 25]
       [--frameworks tensorflow,mxnet,pytorch] [--models lenet,lstm] [--workers 1,2,4] [--no-push] [--keep]
       [--report-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench import common, model, results

SCRIPTS = common.BENCH / "training"
OUT_JSON = model.DATA / "raw" / "frameworks.json"
OUT_PNG = common.PLOTS / "frameworks.png"
SECTION = "08-frameworks"
TITLE = "Framework comparison: the inovex talk redone (issue 11)"
COLUMNS = [
    model.column("framework (mode)"),
    model.column("model"),
    model.column("workers", "{:,}"),
    model.column("aggregate batches/s", "{:.1f}"),
    model.column("samples/s", "{:,.0f}"),
    model.column("per-worker batches/s", "{:.1f}", join=", ", align="left"),
    model.column("speed-up vs 1", "{:.2f}x"),
    model.column("scaling efficiency", "{:.0%}"),
    model.column("load 1m before → after", "{:.1f} → {:.1f}", align="left"),
]
RESULT = re.compile(r"^\[(?P<pod>[^/\]]+)/[^\]]+\] fwbench (?P<json>\{.*\})$")

#: framework -> chart, script, the roles beyond N workers, and how the workers train
FRAMEWORKS: dict[str, dict[str, Any]] = {
    "tensorflow": {
        "chart": "tensorflow-dist",
        "script": "tf_train.py",
        "values": {"chief": 1, "ps": 1, "strategy": "parameter-server",
                   # the ps and worker servers never exit: stop them soon after the chief is done
                   "watchdog": {"intervalSeconds": 2, "missedChecks": 3}},
        "extra_pods": "chief + 1 ps",
    },
    "mxnet": {"chart": "mxnet-dist", "script": "mx_train.py", "values": {"server": 1},
              "extra_pods": "scheduler + 1 server"},
    "pytorch": {"chart": "pytorch-dist", "script": "torch_train.py", "values": {}, "extra_pods": "none"},
}  # fmt: skip
MODELS = {"lenet": {"warmup": 20}, "lstm": {"warmup": 3}}
LABELS = {"lenet": "LeNet-5, 1x28x28, batch 64", "lstm": "2-layer LSTM 200, vocab 10k, 20 steps, batch 20"}


def uptime() -> dict[str, float]:
    return common.load()


def release_name(framework: str, net: str, workers: int) -> str:
    return f"fw-{framework[:2]}-{net}-{workers}"


def job_values(framework: str, net: str, workers: int, registry: str, seconds: float) -> dict[str, Any]:
    from dlcharts.jobs import run

    spec = FRAMEWORKS[framework]
    values = run.cpu_values(spec["chart"], registry)
    values.pop("benchmark", None)  # the chart's own benchmark does not run
    values.update(spec["values"], worker=workers)
    values["defaults"]["args"] = [
        "--model", net, "--seconds", str(seconds), "--warmup", str(MODELS[net]["warmup"]), "--threads", "1",
    ]  # fmt: skip
    return values


def measure(kube: Any, kubeconfig: Path, registry: str, framework: str, net: str, workers: int,
            seconds: float, namespace: str) -> dict[str, Any]:  # fmt: skip
    from dlcharts.helm import find_helm
    from dlcharts.install import Release
    from dlcharts.jobs import run

    spec = FRAMEWORKS[framework]
    chart = common.ROOT / "charts" / spec["chart"]
    release = Release(find_helm(), kubeconfig, release_name(framework, net, workers), namespace)
    lines: list[str] = []
    started = time.monotonic()
    log = common.WORK / "frameworks" / f"{release.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)

    def write(line: str) -> None:
        lines.append(line)
        with log.open("a") as fh:
            fh.write(f"{time.monotonic() - started:7.1f} {line}\n")

    log.write_text("")
    load_before = uptime()
    result = run.run_job(
        kube, release, chart, job_values(framework, net, workers, registry, seconds),
        ["--set-file", f"script={SCRIPTS / spec['script']}"], timeout=600, write=write,
    )  # fmt: skip
    write(run.summary(result))
    load_after = uptime()
    reports = [json.loads(m["json"]) | {"pod": m["pod"]} for line in lines if (m := RESULT.match(line))]
    row: dict[str, Any] = {
        "date": common.now(),
        "framework": framework,
        "model": net,
        "workers": workers,
        "ok": result.ok,
        "job_seconds": round(result.seconds, 1),
        "load_before": load_before,
        "load_after": load_after,
        "reports": reports,
    }
    if not result.ok or not reports:
        row["ok"] = False
        row["problem"] = (result.problem or "no fwbench line in the logs") + "\n" + "\n".join(lines[-40:])
        return row
    first = reports[0]
    row.update(version=first["version"], mode=first["mode"], batch_size=first["batch_size"])
    if framework == "tensorflow":  # one line from the chief: every step any worker ran
        aggregate = first["rate"]
        per_worker = [aggregate / workers] * workers
        row["per_worker_measured"] = False
        row["timed_seconds"] = first["end"] - first["start"]
        row["batches"] = first["batches"]
    else:  # one line per worker
        per_worker = [r["rate"] for r in sorted(reports, key=lambda r: r["rank"])]
        aggregate = sum(per_worker)
        row["per_worker_measured"] = True
        row["timed_seconds"] = max(r["end"] for r in reports) - min(r["start"] for r in reports)
        row["batches"] = sum(r["batches"] for r in reports)
        # every timed batch over the union of the workers' windows: close to the sum when the windows overlap
        row["aggregate_window"] = row["batches"] / row["timed_seconds"]
        if len(reports) != workers:
            row["ok"] = False
            row["problem"] = f"{len(reports)} result line(s) for {workers} worker(s)"
    row["aggregate"] = aggregate
    row["per_worker"] = per_worker
    row["samples_per_second"] = aggregate * first["batch_size"]
    return row


def add_efficiency(rows: list[dict[str, Any]]) -> None:
    """Scaling efficiency: aggregate at N over N x aggregate at 1 worker (same framework and model)."""
    one = {(r["framework"], r["model"]): r["aggregate"] for r in rows if r.get("ok") and r["workers"] == 1}
    for r in rows:
        base = one.get((r["framework"], r["model"]))
        r["efficiency"] = r["aggregate"] / (r["workers"] * base) if base and r.get("ok") else None
        r["speedup"] = r["aggregate"] / base if base and r.get("ok") else None


def table_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for r in rows:
        load = [r["load_before"]["1m"], r["load_after"]["1m"]]
        if not r.get("ok"):
            why = (r.get("problem") or "").splitlines()[0][:120]
            out.append([r["framework"], r["model"], r["workers"], f"FAILED: {why}", None, None, None, None, load])
            continue
        per: Any = r["per_worker"]
        if not r["per_worker_measured"]:
            per = f"{r['per_worker'][0]:.1f} (aggregate / N)"
        out.append(
            [
                f"{r['framework']} {r['version']} ({r['mode']})",
                r["model"],
                r["workers"],
                r["aggregate"],
                r["samples_per_second"],
                per,
                r["speedup"],
                r["efficiency"],
                load,
            ]
        )
    return out


def section(data: dict[str, Any]) -> list[model.Block]:
    """Section 8's blocks from bench/data/raw/frameworks.json."""
    rows = data["rows"]
    loads = [r["load_before"]["1m"] for r in rows] + [r["load_after"]["1m"] for r in rows]
    m = data["machine"]
    blocks = [
        model.facts(
            "run",
            "run",
            [
                ["measured", data["date"]],
                ["command", f"`{data['command']}`"],
                ["machine", f"{m['cpu']} ({m['cores']} cores)"],
                ["timed section of each job, s", data["seconds"], "{:.0f}"],
                ["the whole matrix, min", data["total_minutes"], "{:.0f}"],
                ["load average (1 min) around the jobs", [min(loads), max(loads)], "{:.1f} to {:.1f}"],
                ["load average 1/5/15 min at the start", common.load_text(data["load_start"])],
                ["load average 1/5/15 min at the end", common.load_text(data["load_end"])],
                [
                    "raw numbers (every worker's line, the load before and after each job)",
                    "[data/raw/frameworks.json](data/raw/frameworks.json)",
                ],
            ],
        ),
    ]
    for name in MODELS:
        mine = [r for r in rows if r["model"] == name]
        blocks.append(model.table(name, COLUMNS, table_rows(mine), f"**{LABELS[name]}**"))
    blocks.append(model.image("plot", "plots/frameworks.png", "framework comparison"))
    return blocks


def plot(rows: list[dict[str, Any]]) -> None:
    plt = common.pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"tensorflow": "tab:orange", "mxnet": "tab:blue", "pytorch": "tab:red"}
    for ax, net in zip(axes, MODELS, strict=True):
        for fw in FRAMEWORKS:
            pts = [(r["workers"], r["aggregate"]) for r in rows if r["framework"] == fw and r["model"] == net
                   and r.get("ok")]  # fmt: skip
            if pts:
                style = "--" if fw == "pytorch" else "-"
                label = f"{fw} ({'sync DDP' if fw == 'pytorch' else 'async PS'})"
                ax.plot(*zip(*pts, strict=True), style, marker="o", color=colors[fw], label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4], ["1", "2", "4"])
        ax.set_xlabel("workers (1 CPU each; 2 cores in all)")
        ax.set_ylabel("aggregate batches/s")
        ax.set_title(LABELS[net], fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Framework comparison on the embedded cluster's real node (CPU)", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUT_PNG, dpi=100)
    plt.close(fig)


def report(data: dict[str, Any]) -> None:
    model.update(SECTION, section(data), title=TITLE, by="`python -m bench.frameworks`")
    results.write()
    plot(data["rows"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster-name", default=os.environ.get("DLCHARTS_CLUSTER_NAME", "dlcharts"))
    parser.add_argument("--seconds", type=float, default=25, help="timed section of every job")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--namespace", default="fwbench")
    parser.add_argument("--no-push", action="store_true", help="the images are in the cluster's registry already")
    parser.add_argument("--keep", action="store_true", help="keep bench/frameworks.json's rows of the other jobs")
    parser.add_argument("--report-only", action="store_true", help="table, plot and results.md from the JSON")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]

    if args.report_only:
        data = json.loads(OUT_JSON.read_text())
    else:
        from dlcharts.cluster.config import ClusterConfig
        from dlcharts.cluster.embedded import EmbeddedCluster
        from dlcharts.helm import find_helm
        from dlcharts.install import Kube, Release
        from dlcharts.install.namespaces import create_namespace
        from dlcharts.jobs import run

        handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name)).start()
        if handle.images is None:
            raise SystemExit(f"cluster {args.cluster_name} has no real node: `dlcharts cluster down` it and rerun")
        registry = handle.images.registry
        frameworks = args.frameworks.split(",")
        for fw in [] if args.no_push else frameworks:
            run.push_images(FRAMEWORKS[fw]["chart"], registry, print)
        data = {
            "date": common.now(),
            "command": " ".join(["python -m bench.frameworks", *(argv if argv is not None else sys.argv[1:])]).strip(),
            "machine": common.machine(),
            "seconds": args.seconds,
            "load_start": uptime(),
            "rows": [],
        }
        started = time.perf_counter()
        with Kube.from_kubeconfig(handle.kubeconfig) as kube:
            if kube.get_or_none(f"/api/v1/namespaces/{args.namespace}") is None:
                create_namespace(kube, args.namespace, "restricted")  # every training chart's level
            for fw in frameworks:
                for net in args.models.split(","):
                    for workers in (int(n) for n in args.workers.split(",")):
                        print(f"== {fw} {net} workers={workers} (load {common.load_text(uptime())})", flush=True)
                        row = measure(kube, handle.kubeconfig, registry, fw, net, workers, args.seconds, args.namespace)
                        print(f"   ok={row['ok']} aggregate={row.get('aggregate', 0):.1f} batches/s, job "
                              f"{row['job_seconds']:.0f}s" + (f"\n{row['problem']}" if not row["ok"] else ""),
                              flush=True)  # fmt: skip
                        data["rows"].append(row)
                        # the next job gets the node to itself
                        name = release_name(fw, net, workers)
                        run.replace_release(kube, Release(find_helm(), handle.kubeconfig, name, args.namespace))
        data["load_end"] = uptime()
        data["total_minutes"] = (time.perf_counter() - started) / 60
        if args.keep and OUT_JSON.is_file():  # a subset rerun: the other combinations' last rows stay
            measured = {(r["framework"], r["model"], r["workers"]) for r in data["rows"]}
            old = json.loads(OUT_JSON.read_text())["rows"]
            data["rows"] = [r for r in old if (r["framework"], r["model"], r["workers"]) not in measured] + data["rows"]
            data["rows"].sort(key=lambda r: (list(FRAMEWORKS).index(r["framework"]), r["model"], r["workers"]))
        add_efficiency(data["rows"])
        OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
        OUT_JSON.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for block in section(data):
        if block["kind"] == "table":
            print("\n".join(results.block_lines(block)))
    report(data)
    written = [] if args.report_only else [str(OUT_JSON.relative_to(common.ROOT))]
    print(f"wrote {', '.join([*written, str(model.path_of(SECTION).relative_to(common.ROOT)), 'bench/results.md'])}")
    return 0 if all(r["ok"] for r in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
