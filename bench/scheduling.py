#!/usr/bin/env python3
"""Part 4: scheduling scale on the embedded cluster (real kube-apiserver, controller-manager, scheduler,
etcd; kwok fake GPU nodes).

Starts its own cluster (--cluster-name, default "bench"; --nodes x 8 H100 GPUs, enough for the largest job
with one GPU per pod; pods run for an hour so every pod of a job holds its GPU at once), then for each worker
count installs the chart (--chart, a name under charts/ or a chart folder; default tensorflow-dist;
``--set worker=N``, 1 GPU per pod) into a fresh namespace with Pod Security "restricted" and measures, from
the start of ``helm install``:
  helm install returned, every pod created, every pod bound (spec.nodeName set), every pod Running
(every pod: the sum of the release's Jobs' parallelism, so the other roles count too);
then counts what exists in the namespace (Services, EndpointSlices, Endpoints, Jobs, Pods, ...), finds its
largest object (JSON bytes as the API server returns it; pods sampled, which copy their Job's template) and
the resident memory of each control-plane process (peak while the job was scheduled, and idle). The release
is uninstalled and its namespace deleted before the next size (not after the last: the cluster is stopped at
the end, which removes everything).

Pod counts are read with the API server's Table format (one small row per pod, with its node and status),
polled every --interval seconds.

With --controller-qps N the cluster's kube-controller-manager and kube-scheduler get --kube-api-qps=N
--kube-api-burst=2N (ClusterConfig.api_qps; the embedded cluster's default is 200, the components' own is 20):
the client-side rate limits that pace the Job controller's pod creation and the scheduler's bindings. Saved as
build/bench/scheduling_qps<N>.json.

Writes the raw run to build/bench/<--save-as>.json, then its part of bench/results.md: section 4
(bench/data/04-scheduling.json; a --controller-qps run its comparison table) and bench/plots/scheduling.png, or,
for a run saved as cost_*, its row of section 9 (bench/data/09-cluster-cost.json, rows of other runs kept) and
bench/plots/cost.png.

Usage: .venv/bin/python -m bench.scheduling [--workers 8,64,512,1000] [--nodes 125] [--controller-qps 200]
         [--chart tensorflow-dist] [--cluster-name bench] [--save-as scheduling] [--timeout 240] [--report-only]
The cluster-cost runs of section 9: one chart and one size per run, each on a fresh cluster (a --save-as name
with "before" marks a chart of an earlier commit):
  .venv/bin/python -m bench.scheduling --chart tensorflow-dist --workers 5000 --timeout 900 \
      --save-as cost_tensorflow-dist_5000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from bench import common, model, results

CHARTS = common.ROOT / "charts"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"


class Api:
    """GETs against the cluster with the kubeconfig's client certificate."""

    def __init__(self, kubeconfig: Path) -> None:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        self.host = cfg.host.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file and cfg.key_file:
            self.ctx.load_cert_chain(cfg.cert_file, cfg.key_file)

    def get(self, path: str, accept: str = "application/json", **query: str) -> Any:
        url = self.host + path + ("?" + urllib.parse.urlencode(query) if query else "")
        req = urllib.request.Request(url, headers={"Accept": accept})
        with urllib.request.urlopen(req, timeout=30, context=self.ctx) as resp:
            return json.loads(resp.read())

    def pod_states(self, namespace: str) -> tuple[int, int, int]:
        """(pods, bound, running) in a namespace, from the API server's watch cache (resourceVersion 0): a
        quorum read of every pod each poll cost the API server more than the job it was watching."""
        table = self.get(f"/api/v1/namespaces/{namespace}/pods", TABLE, resourceVersion="0")
        names = [c["name"] for c in table["columnDefinitions"]]
        node, status = names.index("Node"), names.index("Status")
        rows = table.get("rows") or []
        bound = sum(1 for r in rows if r["cells"][node] not in ("<none>", "", None))
        running = sum(1 for r in rows if r["cells"][status] == "Running")
        return len(rows), bound, running

    def count(self, path: str) -> int:
        return len(self.get(path, TABLE).get("rows") or [])


def helm(*args: str, kubeconfig: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    cmd = [str(common.helm_path()), *args, "--kubeconfig", str(kubeconfig)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def cpu_seconds(handle: Any) -> dict[str, float]:
    """User + system CPU time each control-plane process has used so far (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {}
    for name, pid in handle.pids().items():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used[name] = (int(fields[11]) + int(fields[12])) / tick
    return used


def peak(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}


def expected_pods(api: Api, namespace: str) -> int:
    """The pods the release's Jobs will run at once: the sum of their parallelism."""
    jobs = api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs").get("items") or []
    return sum(int(j["spec"].get("parallelism") or 0) for j in jobs)


def largest_object(api: Api, namespace: str) -> dict[str, Any]:
    """The namespace's largest object as the API server returns it (compact JSON bytes), pods sampled."""
    ns = f"/api/v1/namespaces/{namespace}"
    lists = {
        "Pod": (f"{ns}/pods", {"limit": "50"}),
        "ConfigMap": (f"{ns}/configmaps", {}),
        "Secret": (f"{ns}/secrets", {}),
        "Service": (f"{ns}/services", {}),
        "Job": (f"/apis/batch/v1/namespaces/{namespace}/jobs", {}),
        "EndpointSlice": (f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", {}),
    }
    best: dict[str, Any] = {"bytes": 0}
    per_kind = {}
    for kind, (path, query) in lists.items():
        for item in api.get(path, **query).get("items") or []:
            size = len(json.dumps(item, separators=(",", ":")))
            per_kind[kind] = max(per_kind.get(kind, 0), size)
            if size > best["bytes"]:
                best = {"kind": kind, "name": item["metadata"]["name"], "bytes": size}
    return {**best, "per_kind": per_kind}


def run_size(
    handle: Any, api: Api, chart: Path, workers: int, interval: float, timeout: float, cleanup: bool
) -> dict[str, Any]:
    namespace = f"bench-w{workers}"
    handle.create_namespace(namespace, "restricted")
    release = "train"
    rss = handle.rss_bytes()
    cpu_before = cpu_seconds(handle)
    load = common.load()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(common.helm_path()), "install", release, str(chart), "--namespace", namespace,
         "--set", f"worker={workers}", "--set", "defaults.gpu.count=1", "--kubeconfig", str(handle.kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    marks: dict[str, float] = {}
    samples = []
    total = 0
    while True:
        if "helm_install" not in marks and proc.poll() is not None:
            marks["helm_install"] = time.perf_counter() - start
            if proc.returncode != 0:
                raise SystemExit(f"helm install worker={workers} failed: {proc.stderr.read()}")  # type: ignore[union-attr]
            total = expected_pods(api, namespace)
        with contextlib.suppress(Exception):
            pods, bound, running = api.pod_states(namespace)
            now = time.perf_counter() - start
            samples.append((round(now, 3), pods, bound, running))
            if total and pods >= total and "created" not in marks:
                marks["created"] = now
            if total and bound >= total and "bound" not in marks:
                marks["bound"] = now
            if total and running >= total and "running" not in marks:
                marks["running"] = now
        rss = peak(rss, handle.rss_bytes())
        if {"helm_install", "bound", "running"} <= set(marks):
            break
        if time.perf_counter() - start > timeout:
            marks.setdefault("timed_out", time.perf_counter() - start)
            break
        time.sleep(interval)
    cpu_after = cpu_seconds(handle)
    ns = f"/api/v1/namespaces/{namespace}"
    objects = {
        "Service": api.count(f"{ns}/services"),
        "Endpoints": api.count(f"{ns}/endpoints"),
        "EndpointSlice": api.count(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"),
        "Job": api.count(f"/apis/batch/v1/namespaces/{namespace}/jobs"),
        "ConfigMap": api.count(f"{ns}/configmaps") - 1,  # minus kube-root-ca.crt
        "Secret": api.count(f"{ns}/secrets"),
        "Pod": api.count(f"{ns}/pods"),
    }
    result = {
        "workers": workers,
        "pods": total,
        "seconds": marks,
        "objects": objects,
        "largest": largest_object(api, namespace),
        "rss_peak": rss,
        "cpu_seconds": {name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after},
        "load_before": load,
        "samples": samples[:: max(1, len(samples) // 60)],
    }
    print(
        f"scheduling: {chart.name} worker={workers} ({total} pods): {json.dumps(marks)} objects {objects} "
        f"largest {result['largest']['kind']} {result['largest']['bytes']} B, "
        f"control plane peak {sum(rss.values()) / 2**20:.0f} MiB, CPU s {result['cpu_seconds']}",
        flush=True,
    )
    if not cleanup:  # the last size: stopping the cluster removes everything
        return result
    t = time.perf_counter()
    helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "5m", kubeconfig=handle.kubeconfig)
    handle.delete_namespace(namespace, wait=True, timeout=600)
    result["cleanup_seconds"] = time.perf_counter() - t
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", default="8,64,512,1000")
    parser.add_argument("--nodes", type=int, default=0, help="8-GPU nodes (default: enough for the largest job)")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--controller-qps", type=int, default=0, help="--kube-api-qps of controller-manager+scheduler")
    parser.add_argument("--chart", default="tensorflow-dist", help="a chart name under charts/ or a chart folder")
    parser.add_argument("--cluster-name", default="bench", help="the embedded cluster to start (and stop)")
    parser.add_argument("--save-as", default="", help="build/bench/<name>.json (default scheduling[_qps<N>])")
    parser.add_argument("--report-only", action="store_true", help="results.md from build/bench/<--save-as>.json")
    args = parser.parse_args(argv)
    default = f"scheduling_qps{args.controller_qps}" if args.controller_qps else "scheduling"
    name = args.save_as or default
    if args.report_only:
        saved = common.saved(name)
        if saved is None:
            raise SystemExit(f"no {common.WORK / name}.json: run `python -m bench.scheduling` first")
        report(name, saved)
        return 0
    from dlcharts.cluster import H100_LABELS, ClusterConfig, EmbeddedCluster, NodePool
    from dlcharts.host.binaries import ETCD_VERSION, KUBERNETES_VERSION, KWOK_VERSION

    chart = Path(args.chart) if "/" in args.chart else CHARTS / args.chart
    if not (chart / "Chart.yaml").is_file():
        parser.error(f"--chart {args.chart}: no Chart.yaml in {chart}; name a chart under charts/ or a chart folder")
    sizes = [int(w) for w in args.workers.split(",")]
    # one GPU per pod, and room for the roles besides the workers (servers, launcher, chief, ...)
    nodes = args.nodes or math.ceil(max(sizes) * 1.05 / 8) + 2
    pool = NodePool(name="gpu", count=nodes, gpus=8, cpu="192", memory="2Ti", labels=dict(H100_LABELS))
    qps = args.controller_qps or ClusterConfig.api_qps
    config = ClusterConfig(
        name=args.cluster_name, node_pools=(pool,), pod_run_seconds=3600, start_timeout=600, api_qps=qps,
        real_node=False,  # the control plane and fake nodes only: what is measured is the cluster's cost in N
    )  # fmt: skip
    cluster = EmbeddedCluster(config)
    cluster.stop()  # a leftover cluster of that name from an interrupted run
    result: dict[str, Any] = {
        "chart": chart.name,
        "chart_version": yaml_version(chart),
        "nodes": nodes,
        "gpus_per_node": 8,
        "versions": {"kubernetes": KUBERNETES_VERSION, "kwok": KWOK_VERSION, "etcd": ETCD_VERSION},
        "date": common.now(),
        "load_start": common.load(),
        "controller_qps": args.controller_qps or None,
        "runs": [],
    }
    try:
        handle = cluster.start()
        result["start_seconds"] = handle.start_seconds
        result["rss_idle_start"] = handle.rss_bytes()
        print(f"scheduling: cluster up with {nodes} nodes in {handle.start_seconds:.1f}s", flush=True)
        api = Api(handle.kubeconfig)
        for i, workers in enumerate(sizes):
            last = i == len(sizes) - 1
            result["runs"].append(run_size(handle, api, chart, workers, args.interval, args.timeout, cleanup=not last))
        result["rss_idle_end"] = handle.rss_bytes()
    except Exception as exc:  # noqa: BLE001 - record what stood in the way, then stop the cluster
        result["error"] = f"{type(exc).__name__}: {exc}"
        print(f"scheduling: {result['error']}", flush=True)
    finally:
        t = time.perf_counter()
        cluster.stop()
        result["stop_seconds"] = time.perf_counter() - t
    result["load_end"] = common.load()
    common.save(name, result)
    report(name, result)
    return 0 if "error" not in result else 1


# ----- sections 4 and 9 of results.md ------------------------------------------------------------------------

SECTION = "04-scheduling"
TITLE = "Scheduling scale on the embedded cluster"
COST_SECTION = "09-cluster-cost"
COST_TITLE = "Cluster cost in the worker count (issue 19)"
RUN_COLUMNS = [
    model.column("workers", "{:,}"),
    model.column("helm install returned s", "{:.2f}"),
    model.column("all pods created s", "{:.1f}"),
    model.column("**all bound s**", "**{:.1f}**"),
    model.column("all Running s", "{:.1f}"),
    model.column("pods created per s", "{:.0f}"),
    model.column("objects in the namespace"),
    model.column("load 1m before", "{:.2f}"),
]
QPS_COLUMNS = [c for c in RUN_COLUMNS if c["title"] not in ("pods created per s", "objects in the namespace")]
COST_COLUMNS = [
    model.column("chart"),
    model.column("workers (pods)", "{:,} ({:,})"),
    model.column("nodes", "{:,}"),
    model.column("helm install s", "{:.2f}"),
    model.column("all created s", "{:.1f}"),
    model.column("all bound s", "{:.1f}"),
    model.column("**all Running s**", "**{:.1f}**"),
    model.column("**control-plane peak RSS MiB**", "**{:,.0f}**"),
    model.column("kube-apiserver / etcd MiB", "{:,.0f} / {:,.0f}"),
    model.column("control-plane CPU s (ms per pod)", "{:,.0f} ({:.0f})"),
    model.column("largest object", "{} {:,.1f} KiB", align="left"),
    model.column("load 1m before", "{:.2f}"),
    model.column("measured"),
]
#: the order of section 9's rows: a chart at an earlier commit first, then the charts as the README lists them
COST_ORDER = ("tensorflow-dist (before)", "tensorflow-dist", "pytorch-dist", "mxnet-dist", "horovod-mpi")


def _bound(t: dict[str, float]) -> Any:
    if "timed_out" in t and "bound" not in t:
        return f"**not bound** (timed out at {t['timed_out']:.0f} s)"
    return t.get("bound")


def run_rows(sc: dict[str, Any], columns: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per job size, with the cells of ``columns`` (RUN_COLUMNS or QPS_COLUMNS)."""
    rows = []
    for r in sc.get("runs") or []:
        t = r["seconds"]
        created = t.get("created")
        cells = {
            "workers": r["workers"],
            "helm install returned s": t.get("helm_install"),
            "all pods created s": created,
            "**all bound s**": _bound(t),
            "all Running s": t.get("running"),
            "pods created per s": r["workers"] / created if created and r["workers"] >= 64 else None,
            "objects in the namespace": ", ".join(f"{v} {k}" for k, v in sorted(r["objects"].items())),
            "load 1m before": r["load_before"]["1m"],
        }
        rows.append([cells[c["title"]] for c in columns])
    return rows


def section(sc: dict[str, Any]) -> tuple[list[model.Block], list[dict[str, str]]]:
    """Section 4's blocks and target from a raw run of the default sizes (build/bench/scheduling.json)."""
    ver = sc.get("versions", {})
    blocks = [
        model.facts(
            "cluster",
            'embedded cluster "bench"',
            [
                ["kube-apiserver, kube-controller-manager, kube-scheduler", ver.get("kubernetes")],
                ["etcd", ver.get("etcd")],
                ["kwok (fake nodes)", ver.get("kwok")],
                ["nodes", [sc["nodes"], sc["gpus_per_node"]], "{} x {} `nvidia.com/gpu`"],
                ["started in, s", sc.get("start_seconds"), "{:.1f}"],
            ]
            + ([["the run stopped with an error", sc["error"]]] if sc.get("error") else []),
        ),
    ]
    runs = sc.get("runs") or []
    targets = []
    if runs:
        blocks.append(model.table("runs", RUN_COLUMNS, run_rows(sc, RUN_COLUMNS)))
        comps = sorted({k for r in runs for k in r["rss_peak"]})
        columns = [model.column("process"), model.column("idle after start", "{:.0f}")]
        columns += [model.column(f"peak, {r['workers']:,} workers", "{:.0f}") for r in runs]
        columns.append(model.column("at the end", "{:.0f}"))
        rows = [
            [comp, sc.get("rss_idle_start", {}).get(comp, 0) / common.MiB]
            + [r["rss_peak"].get(comp, 0) / common.MiB for r in runs]
            + [sc.get("rss_idle_end", {}).get(comp, 0) / common.MiB]
            for comp in comps
        ]
        blocks.append(model.table("memory", columns, rows, "Resident memory of the control-plane processes (MiB):"))
        total = max(sum(r["rss_peak"].values()) for r in runs) / common.MiB
        blocks.append(
            model.facts("memory-total", "memory", [["largest sum of the per-process peaks, MiB", total, "{:.0f}"]])
        )
        big = max(runs, key=lambda r: r["workers"])
        bound = big["seconds"].get("bound")
        targets.append(
            model.target(
                f"a {big['workers']:,}-worker job fully bound in under 60 s",
                f"{bound:.1f} s from helm install" if bound is not None else "not bound in time",
                bound is not None and bound < 60,
            )
        )
    blocks.append(model.image("plot", "plots/scheduling.png", "scheduling"))
    return blocks, targets


def qps_block(name: str, sc: dict[str, Any]) -> model.Block:
    qps = sc.get("controller_qps")
    return model.table(
        name, QPS_COLUMNS, run_rows(sc, QPS_COLUMNS),
        f"**Comparison: the components' default API rate limits.** The same cluster with kube-controller-manager "
        f"and kube-scheduler at `--kube-api-qps={qps}` (`python -m bench.scheduling --controller-qps {qps}`):",
    )  # fmt: skip


def cost_row(label: str, data: dict[str, Any], r: dict[str, Any]) -> list[Any]:
    t, rss, big = r["seconds"], r["rss_peak"], r.get("largest") or {}
    pods = r.get("pods", r["workers"])
    running = t["running"] if "running" in t else f"**not all** (stopped at {t.get('timed_out', 0):.0f} s)"
    cpu = sum((r.get("cpu_seconds") or {}).values())
    return [
        label,
        [r["workers"], pods],
        data["nodes"],
        t.get("helm_install"),
        t.get("created"),
        t.get("bound"),
        running,
        sum(rss.values()) / common.MiB,
        [rss.get("kube-apiserver", 0) / common.MiB, rss.get("etcd", 0) / common.MiB],
        [cpu, 1000 * cpu / pods] if cpu else None,
        [big.get("kind", "?"), big.get("bytes", 0) / 1024],
        r["load_before"]["1m"],
        data.get("date", "?")[:10],
    ]


def cost_rows(name: str, data: dict[str, Any], old: list[list[Any]]) -> list[list[Any]]:
    """Section 9's rows: those of this run (saved as ``name``) replace the rows of the same chart and worker count."""
    label = str(data.get("chart")) + (" (before)" if "before" in name else "")
    rank = {label: i for i, label in enumerate(COST_ORDER)}
    rows = model.merge_rows(old, [cost_row(label, data, r) for r in data.get("runs") or []], key=2)
    return sorted(rows, key=lambda row: (rank.get(row[0], len(rank)), row[0], row[1][0]))


def report(name: str, data: dict[str, Any]) -> None:
    if name.startswith("cost_"):
        path = model.path_of(COST_SECTION)
        old = (
            next((b["rows"] for b in model.load(path)["blocks"] if b.get("id") == "runs"), []) if path.is_file() else []
        )
        rows = cost_rows(name, data, old)
        model.update(
            COST_SECTION,
            [model.table("runs", COST_COLUMNS, rows)],
            title=COST_TITLE,
            by="`python -m bench.scheduling --save-as cost_<chart>_<workers>`",
        )
        cost_plot(rows)
    elif data.get("controller_qps"):
        model.update(SECTION, [qps_block(f"qps{data['controller_qps']}", data)], title=TITLE)
    else:
        blocks, targets = section(data)
        model.update(SECTION, blocks, title=TITLE, by="`python -m bench.scheduling`", targets=targets)
        scheduling_plot(data)
    results.write()


def scheduling_plot(sc: dict[str, Any]) -> None:
    runs = sc.get("runs") or []
    plt = common.pyplot() if runs else None
    if plt is None:
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    for r in runs:
        samples = r.get("samples") or []
        if samples:
            ax1.plot([x[0] for x in samples], [x[2] for x in samples], label=f"{r['workers']:,} workers: bound")
    qps = common.saved("scheduling_qps20")
    for r in (qps or {}).get("runs") or []:
        samples = r.get("samples") or []
        if samples:
            ax1.plot(
                [x[0] for x in samples],
                [x[2] for x in samples],
                "--",
                label=f"{r['workers']:,} workers, API QPS 20 (default)",
            )
    ax1.axvline(60, color="gray", linestyle=":", label="60 s target")
    ax1.set_xlabel("seconds since helm install")
    ax1.set_ylabel("pods bound to a node")
    ax1.set_title("tensorflow-dist on the embedded cluster")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    comps = sorted({k for r in runs for k in r["rss_peak"]})
    bottom = [0.0] * len(runs)
    for comp in comps:
        vals = [r["rss_peak"].get(comp, 0) / common.MiB for r in runs]
        ax2.bar([str(r["workers"]) for r in runs], vals, bottom=bottom, label=comp)
        bottom = [b + x for b, x in zip(bottom, vals, strict=True)]
    ax2.set_xlabel("workers")
    ax2.set_ylabel("peak RSS, MiB")
    ax2.set_title("control-plane memory")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(common.PLOTS / "scheduling.png", dpi=100)
    plt.close(fig)


def cost_plot(rows: list[list[Any]]) -> None:
    """bench/plots/cost.png from section 9's rows (so every row is drawn, whichever run measured it)."""
    plt = common.pyplot()
    if plt is None:
        return
    series: dict[str, list[tuple[int, Any, float]]] = {}
    for row in rows:
        series.setdefault(row[0], []).append((row[1][0], row[6], row[7]))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5))
    for label, points in series.items():
        style = "--o" if "before" in label else "-o"
        done = [(n, t) for n, t, _ in points if isinstance(t, int | float)]
        ax1.plot([n for n, _ in done], [t for _, t in done], style, label=label)
        ax2.plot([n for n, _, _ in points], [m for _, _, m in points], style, label=label)
    ax1.axhline(90, color="gray", linestyle=":", label="90 s target at 5,000")
    ax2.axhline(4096, color="gray", linestyle=":", label="4 GiB target at 5,000")
    for ax, title in (
        (ax1, "seconds from helm install until every pod is Running"),
        (ax2, "peak control-plane RSS, MiB (sum of processes)"),
    ):
        ax.set_xlabel("workers")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(common.PLOTS / "cost.png", dpi=100)
    plt.close(fig)


def yaml_version(chart: Path) -> str:
    import yaml

    return str(yaml.safe_load((chart / "Chart.yaml").read_text()).get("version"))


if __name__ == "__main__":
    raise SystemExit(main())
