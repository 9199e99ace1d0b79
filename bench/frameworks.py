#!/usr/bin/env python3
"""The inovex talk's framework comparison, redone through our charts on the embedded cluster's real node (CPU).

For each framework x model x worker count, one `dlcharts run`-style job (dlcharts.run.run_job: local image,
CPU values, real node) runs the framework's script from bench/frameworks/ through the chart's `script` value:

  tensorflow  tensorflow-dist  chief=1, ps=1, worker=N; ParameterServerStrategy + ClusterCoordinator (async)
  mxnet       mxnet-dist       scheduler, server=1, worker=N; Gluon with kvstore dist_async (async)
  pytorch     pytorch-dist     worker=N under torchrun; DistributedDataParallel with gloo (SYNCHRONOUS)

Models (synthetic data of the talk's shapes): LeNet-5 on 1x28x28 images, 10 classes, batch 64; a 2-layer LSTM
with 200 hidden units on word ids (vocabulary 10,000, 20 steps, batch 20: TensorFlow's PTB tutorial, small
config). Every pod is limited to 1 CPU (dlcharts.run.CPU_DEFAULTS) and every framework to 1 thread per process.

Writes bench/frameworks.json and bench/frameworks.png, rewrites the generated part of bench/results.md's
framework section (between its `frameworks:begin`/`frameworks:end` markers) and prints the table.

Usage: .venv/bin/python bench/frameworks.py [--cluster-name NAME] [--seconds 25]
       [--frameworks tensorflow,mxnet,pytorch] [--models lenet,lstm] [--workers 1,2,4] [--no-push] [--report-only]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from dlcharts import run  # noqa: E402
from dlcharts.helm import find_helm  # noqa: E402
from dlcharts.install import Kube, Release  # noqa: E402
from dlcharts.install.namespaces import create_namespace  # noqa: E402

SCRIPTS = common.BENCH / "frameworks"
OUT_JSON = common.BENCH / "frameworks.json"
OUT_PNG = common.BENCH / "frameworks.png"
BEGIN, END = "<!-- frameworks:begin (bench/frameworks.py writes this part) -->", "<!-- frameworks:end -->"
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


def release_name(framework: str, model: str, workers: int) -> str:
    return f"fw-{framework[:2]}-{model}-{workers}"


def job_values(framework: str, model: str, workers: int, registry: str, seconds: float) -> dict[str, Any]:
    spec = FRAMEWORKS[framework]
    values = run.cpu_values(spec["chart"], registry)
    values.pop("benchmark", None)  # the chart's own benchmark does not run
    values.update(spec["values"], worker=workers)
    values["defaults"]["args"] = [
        "--model", model, "--seconds", str(seconds), "--warmup", str(MODELS[model]["warmup"]), "--threads", "1",
    ]  # fmt: skip
    return values


def measure(kube: Kube, kubeconfig: Path, registry: str, framework: str, model: str, workers: int,
            seconds: float, namespace: str) -> dict[str, Any]:  # fmt: skip
    spec = FRAMEWORKS[framework]
    chart = run.ROOT / "charts" / spec["chart"]
    release = Release(find_helm(), kubeconfig, release_name(framework, model, workers), namespace)
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
        kube, release, chart, job_values(framework, model, workers, registry, seconds),
        ["--set-file", f"script={SCRIPTS / spec['script']}"], timeout=600, write=write,
    )  # fmt: skip
    write(run.summary(result))
    load_after = uptime()
    reports = [json.loads(m["json"]) | {"pod": m["pod"]} for line in lines if (m := RESULT.match(line))]
    row: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "framework": framework,
        "model": model,
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


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| framework (mode) | model | workers | aggregate batches/s | samples/s | per-worker batches/s "
        "| speed-up vs 1 | scaling efficiency | load 1m before → after |",
        "|---|---|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in rows:
        load = f"{r['load_before']['1m']:.1f} → {r['load_after']['1m']:.1f}"
        if not r.get("ok"):
            why = (r.get("problem") or "").splitlines()[0][:120]
            out.append(f"| {r['framework']} | {r['model']} | {r['workers']} | FAILED: {why} | | | | | {load} |")
            continue
        per = ", ".join(f"{x:.1f}" for x in r["per_worker"])
        if not r["per_worker_measured"]:
            per = f"{r['per_worker'][0]:.1f} (aggregate / N)"
        eff = "—" if r["efficiency"] is None else f"{r['efficiency']:.0%}"
        speed = "—" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        out.append(
            f"| {r['framework']} {r['version']} ({r['mode']}) | {r['model']} | {r['workers']} | {r['aggregate']:.1f} "
            f"| {r['samples_per_second']:,.0f} | {per} | {speed} | {eff} | {load} |"
        )
    return out


def plot(rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colors = {"tensorflow": "tab:orange", "mxnet": "tab:blue", "pytorch": "tab:red"}
    for ax, model in zip(axes, MODELS, strict=True):
        for fw in FRAMEWORKS:
            pts = [(r["workers"], r["aggregate"]) for r in rows if r["framework"] == fw and r["model"] == model
                   and r.get("ok")]  # fmt: skip
            if pts:
                style = "--" if fw == "pytorch" else "-"
                label = f"{fw} ({'sync DDP' if fw == 'pytorch' else 'async PS'})"
                ax.plot(*zip(*pts, strict=True), style, marker="o", color=colors[fw], label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4], ["1", "2", "4"])
        ax.set_xlabel("workers (1 CPU each; 2 cores in all)")
        ax.set_ylabel("aggregate batches/s")
        ax.set_title(LABELS[model], fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Framework comparison on the embedded cluster's real node (CPU)", fontsize=10)
    fig.tight_layout()
    fig.savefig(OUT_PNG, dpi=100)
    plt.close(fig)


def generated_part(data: dict[str, Any]) -> list[str]:
    rows = data["rows"]
    loads = [r["load_before"]["1m"] for r in rows] + [r["load_after"]["1m"] for r in rows]
    m = data["machine"]
    out = [
        BEGIN,
        "",
        f"Measured {data['date']} by `{data['command']}` on {m['cpu']} ({m['cores']} cores), timed section "
        f"{data['seconds']:.0f} s per job, {data['total_minutes']:.0f} min for the whole matrix. Load average "
        f"(1 min) around the jobs: {min(loads):.1f} to {max(loads):.1f} (start {common.load_text(data['load_start'])}, "
        f"end {common.load_text(data['load_end'])}; 1/5/15 min). Raw numbers, every worker's line and the load "
        "before and after each job: [frameworks.json](frameworks.json).",
        "",
    ]
    for model in MODELS:
        out += [f"**{LABELS[model]}**", "", *table([r for r in rows if r["model"] == model]), ""]
    out += ["![framework comparison](frameworks.png)", "", END]
    return out


def write_results(data: dict[str, Any]) -> None:
    """Replace the generated part of results.md's framework section (the text around it is written by hand)."""
    if not common.write_between(BEGIN, END, generated_part(data)):
        print(f"results.md has no {BEGIN!r} ... {END!r} markers: not updated")


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

        handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name)).start()
        if handle.images is None:
            raise SystemExit(f"cluster {args.cluster_name} has no real node: `dlcharts cluster down` it and rerun")
        registry = handle.images.registry
        frameworks = args.frameworks.split(",")
        for fw in [] if args.no_push else frameworks:
            run.push_images(FRAMEWORKS[fw]["chart"], registry, print)
        data = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": " ".join(["bench/frameworks.py", *(argv if argv is not None else sys.argv[1:])]).strip(),
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
                for model in args.models.split(","):
                    for workers in (int(n) for n in args.workers.split(",")):
                        print(f"== {fw} {model} workers={workers} (load {common.load_text(uptime())})", flush=True)
                        row = measure(
                            kube, handle.kubeconfig, registry, fw, model, workers, args.seconds, args.namespace
                        )
                        print(f"   ok={row['ok']} aggregate={row.get('aggregate', 0):.1f} batches/s, job "
                              f"{row['job_seconds']:.0f}s" + (f"\n{row['problem']}" if not row["ok"] else ""),
                              flush=True)  # fmt: skip
                        data["rows"].append(row)
                        # the next job gets the node to itself
                        name = release_name(fw, model, workers)
                        run.replace_release(kube, Release(find_helm(), handle.kubeconfig, name, args.namespace))
        data["load_end"] = uptime()
        data["total_minutes"] = (time.perf_counter() - started) / 60
        if args.keep and OUT_JSON.is_file():  # a subset rerun: the other combinations' last rows stay
            measured = {(r["framework"], r["model"], r["workers"]) for r in data["rows"]}
            old = json.loads(OUT_JSON.read_text())["rows"]
            data["rows"] = [r for r in old if (r["framework"], r["model"], r["workers"]) not in measured] + data["rows"]
            data["rows"].sort(key=lambda r: (list(FRAMEWORKS).index(r["framework"]), r["model"], r["workers"]))
        add_efficiency(data["rows"])
        OUT_JSON.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for model in MODELS:
        print("\n".join(table([r for r in data["rows"] if r["model"] == model])), end="\n\n")
    plot(data["rows"])
    write_results(data)
    print(f"wrote {OUT_JSON.relative_to(common.ROOT)}, {OUT_PNG.relative_to(common.ROOT)}, bench/results.md")
    return 0 if all(r["ok"] for r in data["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
