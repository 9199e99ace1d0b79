#!/usr/bin/env python3
"""Part 3: what one job creates as the worker count grows, ours beside one-Service-per-replica designs.

For each training chart (default values) and worker count 1, 8, 64, 512, 1000, 10000: a cold ``helm template``
(pinned helm, one process per render, median of --repeat) and the same render by the in-process renderer
(dlcharts.render_server, its objects decoded as the harness uses them), the rendered objects by kind and bytes,
the largest object's bytes (a Kubernetes object must stay under 1.5 MiB, etcd's request limit), and what
the cluster's controllers add at run time, computed from the render: pods (each Indexed Job's completions),
and per Service with a selector one Endpoints object and ceil(endpoints / 100) EndpointSlices (the
EndpointSlice controller's default of at most 100 endpoints per slice; a selector Service always has at
least one).

Beside it, the same job (same roles, same replica counts) under designs that create one Service per replica,
computed from their source:
- Kubeflow training-operator v1 (TFJob, PyTorchJob, MXJob): the job object, and per replica one Pod and
  one headless Service (plus that Service's Endpoints and EndpointSlice).
- mpi-operator v2 (MPIJob v2beta1, for the MPI charts): the MPIJob, one headless Service, one ConfigMap,
  one ssh Secret, a launcher Job with its pod, and one Pod per worker.
- the 2017/2018 inovex examples: per replica one workload object (Job), one ClusterIP Service and the pod
  (plus Endpoints and EndpointSlice), no custom resource.
(Where each design's numbers come from: bench/NOTES.md, section 3.)

Writes build/bench/scale.json (raw), section 3 of bench/results.md (bench/data/03-scale.json) and
bench/plots/scale.png.

Usage: .venv/bin/python -m bench.scale [--repeat 3] [--workers 1,8,64,512,1000,10000] [--report-only]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import time
from typing import Any

from bench import common, model, results
from dlcharts.catalogue import TRAINING_CHARTS

SLICE_MAX = 100  # kube-controller-manager --max-endpoints-per-slice default


def pods_of(job: dict[str, Any]) -> int:
    spec = job.get("spec") or {}
    count = spec.get("completions")
    if count is None:
        count = spec.get("parallelism", 1)
    return int(count)


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def analyse(objects: list[Any]) -> dict[str, Any]:
    """Rendered kinds (hooks apart), pods by role, and the controller-made endpoint objects."""
    kinds: collections.Counter[str] = collections.Counter()
    hooks: collections.Counter[str] = collections.Counter()
    roles: dict[str, int] = {}
    jobs = []
    for obj in objects:
        if obj.is_hook:
            hooks[obj.kind] += 1
            continue
        kinds[obj.kind] += 1
        if obj.kind == "Job":
            labels = obj.body["spec"]["template"]["metadata"].get("labels") or {}
            role = labels.get("app.kubernetes.io/component", obj.name)
            roles[role] = roles.get(role, 0) + pods_of(obj.body)
            jobs.append((labels, pods_of(obj.body)))
    slices = endpoints = 0
    for obj in objects:
        if obj.kind == "Service" and not obj.is_hook and (obj.body.get("spec") or {}).get("selector"):
            selected = sum(n for labels, n in jobs if matches(obj.body["spec"]["selector"], labels))
            endpoints += 1
            slices += max(1, math.ceil(selected / SLICE_MAX))
    pods = sum(roles.values())
    return {
        "kinds": dict(sorted(kinds.items())),
        "hooks": dict(hooks),
        "roles": roles,
        "rendered": sum(kinds.values()),
        "pods": pods,
        "endpoints": endpoints,
        "endpointslices": slices,
        "total": sum(kinds.values()) + pods + endpoints + slices,
    }


def kubeflow_v1(roles: dict[str, int]) -> dict[str, Any]:
    """TFJob / PyTorchJob / MXJob: the CR; per replica a Pod and a headless Service (+ Endpoints, slice)."""
    replicas = sum(roles.values())
    return {"custom": 1, "services": replicas, "other": 0, "pods": replicas, "endpoints": replicas,
            "endpointslices": replicas, "total": 1 + 4 * replicas}  # fmt: skip


def mpijob_v2(roles: dict[str, int]) -> dict[str, Any]:
    """MPIJob v2beta1: the CR, 1 headless Service, 1 ConfigMap, 1 Secret, launcher Job + pod, worker Pods."""
    workers = roles.get("worker", 0)
    pods = workers + 1
    slices = max(1, math.ceil(pods / SLICE_MAX))
    return {"custom": 1, "services": 1, "other": 3, "pods": pods, "endpoints": 1, "endpointslices": slices,
            "total": 1 + 1 + 3 + pods + 1 + slices}  # fmt: skip


def inovex(roles: dict[str, int]) -> dict[str, Any]:
    """Per replica: a Job, a ClusterIP Service, the pod, the Service's Endpoints and EndpointSlice."""
    replicas = sum(roles.values())
    return {"custom": 0, "services": replicas, "other": replicas, "pods": replicas, "endpoints": replicas,
            "endpointslices": replicas, "total": 5 * replicas}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", default="1,8,64,512,1000,10000")
    parser.add_argument("--report-only", action="store_true", help="section 3 from build/bench/scale.json")
    args = parser.parse_args(argv)
    if args.report_only:
        data = common.saved("scale")
        if data is None:
            raise SystemExit(f"no {common.WORK / 'scale.json'}: run `python -m bench.scale` first")
        report(data)
        return 0
    from dlcharts import render_server
    from dlcharts.helm import find_helm
    from dlcharts.render import Renderer, RenderRequest, parse_manifest

    helm = find_helm()
    server = render_server.server_for(helm)
    if server is None:
        raise SystemExit("scale: the in-process renderer is unavailable (see the notice above); run `make tools`")
    counts = [int(w) for w in args.workers.split(",")]
    rows = []
    started = time.perf_counter()
    for chart_name in TRAINING_CHARTS:
        chart = common.ROOT / "charts" / chart_name
        Renderer(helm).ensure_dependencies(chart)
        for workers in counts:
            request = RenderRequest(chart=chart, set_values=(f"worker={workers}",), kube_version=common.KUBE_VERSION)
            load = common.load()["1m"]
            samples, proc = common.timed(lambda: helm.run(request.helm_args()), args.repeat)  # noqa: B023
            objects = list(parse_manifest(proc.stdout).values())

            def by_server() -> None:
                reply = server.template(request.helm_args())  # noqa: B023
                assert reply is not None and reply.status == 0, reply and reply.stderr
                parse_manifest(reply.stdout, request.namespace, reply.objects, reply.fallback)  # noqa: B023

            server_samples, _ = common.timed(by_server, args.repeat)
            sizes = {o.ref(): len(json.dumps(o.body, separators=(",", ":")).encode()) for o in objects}  # as the API
            largest = max(sizes, key=lambda ref: sizes[ref])  # server stores it: compact JSON
            ours = analyse(objects)
            mpi = chart_name in ("horovod-mpi", "cntk-dist")
            rows.append(
                {
                    "chart": chart_name,
                    "workers": workers,
                    "render_samples": samples,
                    "server_samples": server_samples,
                    "largest": {"object": largest, "bytes": sizes[largest]},
                    "load_1m": load,
                    "bytes": len(proc.stdout.encode()),
                    "ours": ours,
                    "operator": ("MPIJob v2" if mpi else "Kubeflow v1"),
                    "kubeflow": mpijob_v2(ours["roles"]) if mpi else kubeflow_v1(ours["roles"]),
                    "inovex": inovex(ours["roles"]),
                }
            )
            print(
                f"scale: {chart_name} worker={workers}: {ours['rendered']} rendered objects, {ours['pods']} pods, "
                f"{len(proc.stdout) / 1024:.1f} KiB, binary {common.median(samples) * 1e3:.0f} ms, "
                f"server {common.median(server_samples) * 1e3:.0f} ms, largest {largest} "
                f"{sizes[largest] / 1024:.0f} KiB",
                flush=True,
            )
    data = {
        "rows": rows,
        "workers": counts,
        "repeat": args.repeat,
        "seconds": time.perf_counter() - started,
        "helm": helm.version,
    }
    common.save("scale", data)
    report(data)
    return 0


# ----- section 3 of results.md -----------------------------------------------------------------------------

SECTION = "03-scale"
TITLE = "Scale of what one job creates"
COLUMNS = [
    model.column("chart"),
    model.column("workers", "{:,}"),
    model.column("rendered objects (by kind)", "{:,} ({})", align="left"),
    model.column("pods", "{:,}"),
    model.column("Endpoints + slices", "{:,} + {:,}"),
    model.column("**total**", "**{:,}**"),
    model.column("rendered KiB", "{:.1f}"),
    model.column("render ms: binary / server", "{:.0f} / {:.0f}"),
    model.column("largest object KiB", "{:.1f}"),
    model.column("Kubeflow: total (Services)", "{}: {:,} ({:,})"),
    model.column("inovex: total (Services)", "{:,} ({:,})"),
    model.column("load 1m", "{:.2f}"),
]
RATIO_COLUMNS = [model.column("chart"), model.column("binary", "{:.1f}x"), model.column("in-process", "{:.1f}x")]


def section(s: dict[str, Any]) -> tuple[list[model.Block], list[dict[str, str]]]:
    """Section 3's blocks and targets from a raw run (build/bench/scale.json)."""
    rows = []
    for r in s["rows"]:
        o, kf, ino = r["ours"], r["kubeflow"], r["inovex"]
        binary = common.median(r["render_samples"]) * 1e3
        server = common.median(r["server_samples"]) * 1e3 if r.get("server_samples") else None
        rows.append(
            [
                r["chart"],
                r["workers"],
                [o["rendered"], ", ".join(f"{v} {k}" for k, v in o["kinds"].items())],
                o["pods"],
                [o["endpoints"], o["endpointslices"]],
                o["total"],
                r["bytes"] / 1024,
                [binary, server] if server is not None else f"{binary:.0f} / –",
                r["largest"]["bytes"] / 1024 if r.get("largest") else None,
                [r["operator"], kf["total"], kf["services"]],
                [ino["total"], ino["services"]],
                r["load_1m"],
            ]
        )
    lo, hi = min(s["workers"]), max(s["workers"])
    ratios, constant, growing = [], True, []
    for chart in [c for c in TRAINING_CHARTS if any(r["chart"] == c for r in s["rows"])]:
        mine = [r for r in s["rows"] if r["chart"] == chart]
        by_w = {r["workers"]: r for r in mine}
        if lo in by_w and hi in by_w:
            binary = common.median(by_w[hi]["render_samples"]) / common.median(by_w[lo]["render_samples"])
            server = None
            if by_w[hi].get("server_samples") and by_w[lo].get("server_samples"):
                server = common.median(by_w[hi]["server_samples"]) / common.median(by_w[lo]["server_samples"])
            ratios.append([chart, binary, server])
        if len({tuple(sorted(r["ours"]["kinds"].items())) for r in mine}) != 1:
            constant = False
            growing.append(chart)
    blocks = [
        model.facts(
            "setup",
            "setup",
            [
                ["Kubernetes", common.KUBE_VERSION],
                ["helm", s["helm"]],
                ["renders per time shown (their median)", s["repeat"], "{}"],
            ],
        ),
        model.table("jobs", COLUMNS, rows),
        model.table("render-ratio", RATIO_COLUMNS, ratios, f"Render time at worker={hi:,} over worker={lo}:"),
        model.image("plot", "plots/scale.png", "objects per job"),
    ]
    targets = []
    if ratios:
        bad = [f"{c} {x:.1f}x" for c, x, _ in ratios if x > 3]
        targets.append(
            model.target(
                f"render time at worker={hi:,} within 3x of worker={lo} (each training chart)",
                ", ".join(f"{c} {x:.1f}x" for c, x, _ in ratios),
                "yes" if not bad else f"no: {', '.join(bad)}",
            )
        )
    targets.append(
        model.target(
            "non-pod objects constant in the worker count",
            "same kinds and counts at every N" if constant else f"grows for {', '.join(growing)}",
            constant,
        )
    )
    return blocks, targets


def report(data: dict[str, Any]) -> None:
    blocks, targets = section(data)
    model.update(SECTION, blocks, title=TITLE, by="`python -m bench.scale`", targets=targets)
    results.write()
    plot(data)


def plot(s: dict[str, Any]) -> None:
    plt = common.pyplot()
    if plt is None:
        return
    rows = s["rows"]
    charts = [c for c in TRAINING_CHARTS if any(r["chart"] == c for r in rows)]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    for ax, chart in zip(axes.flat, charts, strict=False):
        mine = sorted((r for r in rows if r["chart"] == chart), key=lambda r: r["workers"])
        w = [r["workers"] for r in mine]
        direct = [r["kubeflow"]["custom"] + r["kubeflow"]["services"] + r["kubeflow"]["other"] for r in mine]
        ax.plot(w, [r["ours"]["total"] for r in mine], "o-", label="ours: all API objects")
        ax.plot(w, [r["ours"]["rendered"] for r in mine], "o--", label="ours: rendered (no pods, no endpoints)")
        ax.plot(w, [r["kubeflow"]["total"] for r in mine], "s-", label=f"{mine[0]['operator']}: all")
        ax.plot(w, direct, "s--", label=f"{mine[0]['operator']}: created by it (no pods, no endpoints)")
        ax.plot(w, [r["inovex"]["total"] for r in mine], "^-", label="inovex: all")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(chart)
        ax.set_xlabel("workers")
        ax.set_ylabel("API objects")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    ax = axes.flat[len(charts)] if len(charts) < 6 else None
    if ax is not None:
        for chart in charts:
            mine = sorted((r for r in rows if r["chart"] == chart), key=lambda r: r["workers"])
            ax.plot(
                [r["workers"] for r in mine],
                [common.median(r["render_samples"]) * 1e3 for r in mine],
                "o-",
                label=chart,
            )
        ax.set_xscale("log")
        ax.set_title("helm template time (cold process)")
        ax.set_xlabel("workers")
        ax.set_ylabel("ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("What one training job creates, by worker count")
    fig.tight_layout()
    fig.savefig(common.PLOTS / "scale.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
