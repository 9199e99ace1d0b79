#!/usr/bin/env python3
"""Each training chart's own benchmark for real on the embedded cluster's real nodes (`dlcharts run`, CPU
values, each role spread over the real nodes when there are several): wall time of the run, time until every pod
of the release had started its main container, time to the first training step, time from the Jobs' end until
the last pod of the release exited, and the size of the local image it ran.

Times are taken where a user sees them: from the start of `dlcharts run`'s job in a namespace made for it
(uninstalling an earlier release, helm install) to the last main container's start, to the first log line of a
training step, and to the end of the run. The images are pushed before the clock starts, so a cold image build is
not in the wall time (bench/images.py has those); a node's first pull of an image is (run twice to see the warm
times).

Usage: .venv/bin/python -m bench.real_runs [--charts tensorflow-dist,...] [--cluster-name dlcharts]
(writes build/bench/real_runs.json, prints the table, and puts its rows for this cluster's number of real nodes
in section 15 of bench/results.md: run it on clusters of 1, 2 and 3 real nodes, `dlcharts cluster up --real-nodes N`)
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import common, model, results
from dlcharts.cluster import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.helm import find_helm
from dlcharts.images import Builder
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import delete_namespace
from dlcharts.jobs import run

#: what each chart runs (the same roles as the cluster tier's tests) and the log line of a training step
CHARTS: dict[str, tuple[tuple[str, ...], str]] = {
    "tensorflow-dist": (("--set", "worker=2"), r"bench_tf: step \d+/"),
    "pytorch-dist": (("--set", "worker=2"), r"bench_ddp: step \d+/"),
    "mxnet-dist": (("--set", "worker=2", "--set", "server=2"), r"bench_mx: step \d+/"),
    "horovod-mpi": (("--set", "worker=2"), r"warming up: \d+ batches"),
    "cntk-dist": (("--set", "worker=2"), r"mpi4py: step \d+/"),
    "jax-dist": (("--set", "worker=2"), r"bench_jax: step \d+/"),
    "deepspeed-dist": (("--set", "worker=2"), r"ds-bench: step \d+/"),
}
SECTION = "15-real-nodes"
TITLE = "Across real nodes: every chart on 1, 2 and 3 real nodes, and node faults (issue 32)"


def image_size(chart: str) -> dict[str, int]:
    """Compressed bytes (what a node pulls) of each local image ``chart`` runs, by image name."""
    builder = Builder()
    return {image.name: builder.build(image).size for image, _ in run.local_images(chart)}


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def job_completions(kube: Kube, namespace: str) -> list[datetime.datetime]:
    """When each completed Job of the release completed."""
    return [_when(j["status"]["completionTime"]) for j in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs")
            if (j.get("status") or {}).get("completionTime")]  # fmt: skip


def last_exit_after_first_job(kube: Kube, namespace: str, done: list[datetime.datetime]) -> float | None:
    """Seconds from the first of the release's Jobs to complete (``done``: the training role: workers, chief or
    launcher) until the last container of any pod exited: how long the other roles (parameter servers,
    schedulers, servers, sshd workers) held their nodes after the training ended."""
    exits = [
        _when(state["terminated"]["finishedAt"])
        for pod in kube.items(f"/api/v1/namespaces/{namespace}/pods")
        for state in (c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or [])
        if "terminated" in state
    ]
    if not done or not exits:
        return None
    return round((max(exits) - min(done)).total_seconds(), 1)


def last_main_start(kube: Kube, namespace: str) -> datetime.datetime | None:
    """When the last pod of the release started its main container (the first container of its spec)."""
    starts = []
    for pod in kube.items(f"/api/v1/namespaces/{namespace}/pods"):
        main = pod["spec"]["containers"][0]["name"]
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            state = status.get("state") or {}
            started = (state.get("terminated") or state.get("running") or {}).get("startedAt")
            if status["name"] == main and started:
                starts.append(_when(started))
    return max(starts) if starts else None


def one(
    chart: str, kubeconfig: Path, registry: str, nodes: int, helm_args: tuple[str, ...] | None = None,
    measure: Callable[[Kube, str], dict[str, Any]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One run of ``chart`` (with ``helm_args``, default CHARTS'); ``measure`` adds what it finds in the release's
    namespace once the run has ended (bench.operators: the objects the job left)."""
    default_args, step = CHARTS[chart]
    helm_args = default_args if helm_args is None else helm_args
    namespace = f"bench-{chart}-{uuid.uuid4().hex[:6]}"
    path = common.ROOT / "charts" / chart
    run.push_images(chart, registry, lambda _line: None)
    first_step: list[float] = []

    def write(line: str) -> None:
        if not first_step and re.search(step, line):
            first_step.append(time.monotonic() - started)

    before = common.load()
    with Kube.from_kubeconfig(kubeconfig) as kube:
        # at the chart's Pod Security level, before the clock as the operators' namespace is (bench.operators): its
        # check of the chart's pods (a render) took 0.4-0.7 s, which `helm install` does not spend
        run.prepare_namespace(kube, namespace, path, write=lambda _line: None)
        started, started_at = time.monotonic(), datetime.datetime.now(datetime.UTC)
        result = run.run_job(
            kube, Release(find_helm(), kubeconfig, "bench", namespace), path,
            run.cpu_values(chart, registry, spread=nodes > 1), helm_args, write=write,
        )  # fmt: skip
        done = job_completions(kube, namespace)
        release_ended = last_exit_after_first_job(kube, namespace, done)
        all_started = last_main_start(kube, namespace)
        measured = measure(kube, namespace) if measure else {}
        delete_namespace(kube, namespace)
    return {
        "chart": chart,
        "real_nodes": nodes,
        "nodes_used": sorted({p.node for p in result.pods}),
        "args": " ".join(helm_args),
        "all_started_s": round((all_started - started_at).total_seconds(), 1) if all_started else None,
        "ok": result.ok,
        "wall_s": round(result.seconds, 1),
        #: from the start until the last of the release's Jobs completed (the verdict; wall_s also counts the
        #: settling and the log stream's end)
        "verdict_s": round((max(done) - started_at).total_seconds(), 1) if result.ok and done else None,
        "first_step_s": round(first_step[0], 1) if first_step else None,
        "settled_s": None if result.settled_seconds is None else round(result.settled_seconds, 1),
        "last_exit_after_first_job_s": release_ended,
        "pods": len(result.pods),
        "images": image_size(chart),
        "load_before": before,
        "load_after": common.load(),
        **measured,
    }


COLUMNS = [
    model.column("chart"),
    model.column("roles"),
    model.column("ok"),
    model.column("wall s", "{:.0f}"),
    model.column("first step s", "{}"),
    model.column("last container exit after the first Job's end s", "{}"),
    model.column("images (compressed MiB)"),
    model.column("load 1m before → after", "{:.1f} → {:.1f}", align="left"),
]


SECTION_COLUMNS = [
    model.column("chart (roles)", align="left"),
    model.column("real nodes", "{}"),
    model.column("nodes its pods ran on", join=", ", align="left"),
    model.column("ok"),
    model.column("all started s", "{:.0f}"),
    model.column("first step s", "{:.0f}"),
    model.column("wall s", "{:.0f}"),
    model.column("load 1m before → after", "{:.1f} → {:.1f}", align="left"),
]


def section_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            f"{r['chart']} (`{r['args']}`)", r["real_nodes"], r["nodes_used"], r["ok"], r["all_started_s"],
            r["first_step_s"], r["wall_s"], [r["load_before"]["1m"], r["load_after"]["1m"]],
        ]
        for r in rows
    ]  # fmt: skip


def report(rows: list[dict[str, Any]]) -> None:
    """This run's rows (for its number of real nodes) into section 15's table, the other node counts' kept."""
    path = model.path_of(SECTION)
    old: list[list[Any]] = []
    if path.is_file():
        old = next((b["rows"] for b in model.load(path)["blocks"] if b.get("id") == "runs"), [])
    merged = model.merge_rows(old, section_rows(rows), key=2)
    merged.sort(key=lambda r: (r[0], r[1]))
    caption = (
        "`python -m bench.real_runs` on a cluster of 1, 2, then 3 real nodes (`dlcharts cluster up --real-nodes N`), "
        "two CPU cores shared by every node: a proof that each chart runs across nodes, with its costs, not a scaling "
        "claim."
    )
    block = model.table("runs", SECTION_COLUMNS, merged, caption=caption)
    model.update(SECTION, [block], title=TITLE, by="`python -m bench.real_runs`, `python -m bench.node_faults`")
    results.write()


def table(rows: list[dict[str, Any]]) -> str:
    cells = [
        [
            r["chart"],
            f"`{r['args']}`",
            r["ok"],
            r["wall_s"],
            r["first_step_s"],
            r["last_exit_after_first_job_s"],
            ", ".join(f"{name} {size / 2**20:.0f}" for name, size in r["images"].items()),
            [r["load_before"]["1m"], r["load_after"]["1m"]],
        ]
        for r in rows
    ]
    return "\n".join(results.table_lines(COLUMNS, cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--charts", default=",".join(CHARTS))
    parser.add_argument("--cluster-name", default=ClusterConfig.name)
    args = parser.parse_args(argv)
    handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name)).start()
    assert handle.images is not None, "the cluster runs without its real node"
    nodes = len(handle.real_nodes)
    rows = [one(chart, handle.kubeconfig, handle.images.registry, nodes) for chart in args.charts.split(",")]
    common.save("real_runs", {"machine": common.machine(), "runs": rows})
    print(table(rows))
    report(rows)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
