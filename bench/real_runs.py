#!/usr/bin/env python3
"""Each training chart's own benchmark for real on the embedded cluster's real node (`dlcharts run`, CPU
values): wall time of the run, time to the first training step, time from the Jobs' end until the last pod of
the release exited, and the size of the local image it ran.

Times are taken where a user sees them: from the start of `dlcharts run`'s job (uninstalling an earlier
release, helm install) to the first log line of a training step, and to the end of the run. The images are
pushed before the clock starts, so a cold image build is not in the wall time (bench/images.py has those).

Usage: .venv/bin/python -m bench.real_runs [--charts tensorflow-dist,...] [--cluster-name dlcharts]
(writes build/bench/real_runs.json and prints the table; no section of bench/results.md holds these numbers yet)
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench import common, model, results
from dlcharts import run
from dlcharts.cluster import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.helm import find_helm
from dlcharts.images import Builder
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import delete_namespace

#: what each chart runs (the same roles as the cluster tier's tests) and the log line of a training step
CHARTS: dict[str, tuple[tuple[str, ...], str]] = {
    "tensorflow-dist": (("--set", "worker=2"), r"bench_tf: step \d+/"),
    "pytorch-dist": (("--set", "worker=2"), r"bench_ddp: step \d+/"),
    "mxnet-dist": (("--set", "worker=2", "--set", "server=2"), r"bench_mx: step \d+/"),
    "horovod-mpi": (("--set", "worker=2"), r"warming up: \d+ batches"),
}


def image_size(chart: str) -> dict[str, int]:
    """Compressed bytes (what a node pulls) of each local image ``chart`` runs, by image name."""
    builder = Builder()
    return {image.name: builder.build(image).size for image, _ in run.local_images(chart)}


def _when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def last_exit_after_first_job(kube: Kube, namespace: str) -> float | None:
    """Seconds from the first of the release's Jobs to complete (the training role: workers, chief or
    launcher) until the last container of any pod exited: how long the other roles (parameter servers,
    schedulers, servers, sshd workers) held their nodes after the training ended."""
    done = [_when(j["status"]["completionTime"]) for j in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs")
            if (j.get("status") or {}).get("completionTime")]  # fmt: skip
    exits = [
        _when(state["terminated"]["finishedAt"])
        for pod in kube.items(f"/api/v1/namespaces/{namespace}/pods")
        for state in (c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or [])
        if "terminated" in state
    ]
    if not done or not exits:
        return None
    return round((max(exits) - min(done)).total_seconds(), 1)


def one(chart: str, kubeconfig: Path, registry: str) -> dict[str, Any]:
    helm_args, step = CHARTS[chart]
    namespace = f"bench-{chart}-{uuid.uuid4().hex[:6]}"
    path = common.ROOT / "charts" / chart
    run.push_images(chart, registry, lambda _line: None)
    first_step: list[float] = []
    started = time.monotonic()

    def write(line: str) -> None:
        if not first_step and re.search(step, line):
            first_step.append(time.monotonic() - started)

    before = common.load()
    with Kube.from_kubeconfig(kubeconfig) as kube:
        run.prepare_namespace(kube, namespace, path, write=lambda _line: None)  # at the chart's Pod Security level
        result = run.run_job(
            kube, Release(find_helm(), kubeconfig, "bench", namespace), path,
            run.cpu_values(chart, registry), helm_args, write=write,
        )  # fmt: skip
        release_ended = last_exit_after_first_job(kube, namespace)
        delete_namespace(kube, namespace)
    return {
        "chart": chart,
        "args": " ".join(helm_args),
        "ok": result.ok,
        "wall_s": round(result.seconds, 1),
        "first_step_s": round(first_step[0], 1) if first_step else None,
        "settled_s": None if result.settled_seconds is None else round(result.settled_seconds, 1),
        "last_exit_after_first_job_s": release_ended,
        "pods": len(result.pods),
        "images": image_size(chart),
        "load_before": before,
        "load_after": common.load(),
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
    rows = [one(chart, handle.kubeconfig, handle.images.registry) for chart in args.charts.split(",")]
    common.save("real_runs", {"machine": common.machine(), "runs": rows})
    print(table(rows))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
