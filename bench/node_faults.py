#!/usr/bin/env python3
"""Node faults in the middle of training, for real, on the embedded cluster's real nodes: what each chart does
when a node is lost or cut off, and how long it takes to a verdict.

Each case runs a chart as `dlcharts run` does (CPU values, each role spread over the real nodes), waits for a
training step in the log, then injects the fault into the node of one victim pod (never the node of rank 0, the
launcher or the chief, so that the verdict is the survivors' to give) with :mod:`dlcharts.cluster.faults`:

- ``lose``: the node's host is gone (its pods cut off, then every process of the node killed at once);
- ``partition``: the traffic between the victim's node and the others is dropped, and stays dropped.

The clock starts at the fault. Recorded: the verdict (the Jobs' end, Complete or Failed, or the cap) and its time,
when the lost node turned NotReady, and whether every pod of the release ended. Afterwards the node is restored
(lose) or rejoined (partition) and the namespace deleted, so the cases run one after another on one cluster.

Usage: .venv/bin/python -m bench.node_faults [--cases pytorch-dist/lose,...] [--cluster-name nodes] [--cap 900]
(the cluster must run with 2 or more real nodes: `dlcharts cluster up --name nodes --real-nodes 2`; writes
build/bench/node_faults.json and bench/data/15-real-nodes.json's fault table)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import threading
import time
import uuid
from typing import Any

from bench import common, model, results
from bench.real_runs import SECTION, TITLE
from dlcharts.catalogue import mpi4py_program
from dlcharts.cluster import ClusterConfig, faults
from dlcharts.cluster.embedded import ClusterHandle, EmbeddedCluster
from dlcharts.helm import find_helm
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import delete_namespace
from dlcharts.jobs import run


@dataclasses.dataclass(frozen=True)
class Case:
    chart: str
    helm_args: tuple[str, ...]
    step: str  # a log line of a training step, after which the fault comes
    victim: tuple[str, int]  # the role and index whose node the fault hits


CHARTS: dict[str, Case] = {
    "pytorch-dist": Case("pytorch-dist", ("--set", "worker=2", "--set", "benchmark.steps=1000"),
                         r"bench_ddp: step \d+/", ("worker", 1)),
    "pytorch-elastic": Case("pytorch-dist", ("--set", "worker=2", "--set", "benchmark.steps=1000",
                                              "--set", "elastic.minWorkers=1", "--set", "elastic.maxRestarts=3"),
                            r"bench_ddp: step \d+/", ("worker", 1)),
    "tensorflow-dist": Case("tensorflow-dist", ("--set", "worker=2", "--set", "benchmark.steps=1000"),
                            r"bench_tf: step \d+/", ("worker", 1)),
    "mxnet-dist": Case("mxnet-dist", ("--set", "worker=2", "--set", "server=2", "--set", "benchmark.steps=1000"),
                       r"bench_mx: step \d+/", ("worker", 1)),
    "horovod-mpi": Case("horovod-mpi", ("--set", "worker=2"), r"iteration 0:", ("worker", 1)),
    "cntk-dist": Case("cntk-dist", ("--set", "worker=2", "--set-json",
                                    f"cntk.python.command={json.dumps(mpi4py_program(600, 0.5))}"),
                      r"mpi4py: step 3/", ("worker", 1)),
    "jax-dist": Case("jax-dist", ("--set", "worker=2", "--set", "benchmark.steps=100000"), r"bench_jax: step \d+/",
                     ("worker", 1)),
    "deepspeed-dist": Case("deepspeed-dist", ("--set", "worker=2", "--set", "benchmark.steps=100000"),
                           r"ds-bench: step 10/", ("worker", 1)),
}  # fmt: skip
FAULTS = ("lose", "partition")


def _victim_node(kube: Kube, namespace: str, role: str, index: int, avoid: set[str]) -> str | None:
    """The node of the role's pod ``index``, or else of its highest index on a node not in ``avoid``."""
    found: list[tuple[bool, int, str]] = []
    for pod in kube.items(f"/api/v1/namespaces/{namespace}/pods", f"app.kubernetes.io/component={role}"):
        i = int(pod["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index", -1))
        node = (pod.get("spec") or {}).get("nodeName")
        if node and node not in avoid:
            found.append((i == index, i, str(node)))
    return max(found)[2] if found else None


def _first_pod_nodes(kube: Kube, namespace: str) -> set[str]:
    """The nodes of rank 0's side: index 0 of every role (launcher, chief, scheduler, worker 0)."""
    return {
        p["spec"]["nodeName"]
        for p in kube.items(f"/api/v1/namespaces/{namespace}/pods")
        if p["metadata"]["labels"].get("batch.kubernetes.io/job-completion-index") == "0"
        and (p.get("spec") or {}).get("nodeName")
        and p["metadata"]["labels"].get("app.kubernetes.io/component") != "worker"
    }


def _first_failure(kube: Kube, namespace: str, since: float | None) -> list[Any] | None:
    """[seconds after ``since``, pod] of the first main container of the release that ended with an error after the
    fault (the survivors' verdict), or None."""
    if since is None:
        return None
    ends = []
    for pod in kube.items(f"/api/v1/namespaces/{namespace}/pods"):
        main = pod["spec"]["containers"][0]["name"]
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            ended = (status.get("state") or {}).get("terminated") or {}
            if status["name"] == main and ended.get("exitCode") and ended.get("finishedAt"):
                at = run.parse_time(ended["finishedAt"]).timestamp() - since
                if at > 0:
                    ends.append([round(at, 1), pod["metadata"]["name"]])
    return min(ends) if ends else None


def one(handle: ClusterHandle, name: str, fault: str, cap: float) -> dict[str, Any]:
    case = CHARTS[name]
    registry = handle.images.registry if handle.images else ""
    namespace = f"fault-{uuid.uuid4().hex[:6]}"
    path = common.ROOT / "charts" / case.chart
    run.push_images(case.chart, registry, lambda _line: None)
    found: dict[str, Any] = {}
    lines: list[str] = []

    def inject() -> None:
        with Kube.from_kubeconfig(handle.kubeconfig) as kube:
            avoid = _first_pod_nodes(kube, namespace)
            victim = _victim_node(kube, namespace, *case.victim, avoid)
            if victim is None:
                found["error"] = f"no node of {case.victim} apart from {sorted(avoid)}"
                return
            node = faults.real_node(handle.state_dir, handle.name, victim)
            found["node"], found["at"], found["at_wall"] = victim, time.monotonic(), time.time()
            (faults.lose if fault == "lose" else faults.isolate)(node)
            while "ended" not in found:  # when the node turns NotReady (the lifecycle controller's verdict)
                ready = [
                    c["status"]
                    for c in kube.get(f"/api/v1/nodes/{victim}")["status"]["conditions"]
                    if c["type"] == "Ready"
                ]
                if ready != ["True"] and "not_ready" not in found:
                    found["not_ready"] = time.monotonic() - found["at"]
                time.sleep(1)

    clock = time.monotonic()

    def write(line: str) -> None:
        since = time.monotonic() - found.get("at", clock)
        lines.append(f"{'fault' if 'at' in found else 'install'} {since:+7.1f}s {line}")
        if "injecting" not in found and re.search(case.step, line):
            found["injecting"] = True
            threading.Thread(target=inject, daemon=True).start()

    load = common.load()
    with Kube.from_kubeconfig(handle.kubeconfig) as kube:
        run.prepare_namespace(kube, namespace, path, write=lambda _line: None)
        values = run.cpu_values(case.chart, registry, spread=True)
        release = Release(find_helm(), handle.kubeconfig, "fault", namespace)
        result = run.run_job(kube, release, path, values, case.helm_args, timeout=cap, write=write)
        found["ended"] = time.monotonic()
        nodes_now = {p.name: p.node for p in result.pods}
        first_failure = _first_failure(kube, namespace, found.get("at_wall"))
        if "node" in found:
            node = faults.real_node(handle.state_dir, handle.name, found["node"])
            if fault == "lose":
                faults.restore(node, handle.kubeconfig, 300)
            else:
                faults.rejoin(node)
        delete_namespace(kube, namespace)
    (common.WORK / "node_faults").mkdir(parents=True, exist_ok=True)
    (common.WORK / "node_faults" / f"{name}-{fault}.log").write_text("\n".join(lines) + "\n")
    verdict = "completed" if result.ok else ("cap" if any(s == "running" for s in result.jobs.values()) else "failed")
    return {
        "case": name,
        "chart": case.chart,
        "args": " ".join(case.helm_args),
        "fault": fault,
        "node": found.get("node"),
        "error": found.get("error"),
        "verdict": verdict,
        "jobs": result.jobs,
        "verdict_s": round(found["ended"] - found["at"], 1) if "at" in found else None,
        "not_ready_s": round(found["not_ready"], 1) if "not_ready" in found else None,
        "first_failure_s": first_failure,
        "settled_s": result.settled_seconds,
        "problem": result.problem.splitlines()[0] if result.problem else "",
        "pods": [[p.name, p.node, p.phase, p.exit_code] for p in result.pods],
        "nodes": sorted(set(nodes_now.values())),
        "load_before": load,
    }


COLUMNS = [
    model.column("case", align="left"),
    model.column("values", align="left"),
    model.column("fault", align="left"),
    model.column("node NotReady after s", "{:.0f}"),
    model.column("first pod failed after s", "{:.0f}"),
    model.column("verdict", align="left"),
    model.column("fault → verdict s", "{:.0f}"),
]


def rows_of(runs: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            r["case"], f"`{r['args']}`", r["fault"], r["not_ready_s"],
            (r.get("first_failure_s") or [None])[0], r["verdict"], r["verdict_s"],
        ]
        for r in runs
    ]  # fmt: skip


def report(runs: list[dict[str, Any]]) -> None:
    caption = (
        "`python -m bench.node_faults` on 2 real nodes: the fault hits the node of a pod that is not rank 0, the "
        "launcher or the chief, after the job's first logged step; times from the fault. verdict: the Jobs' end, or "
        "cap (the bench's limit; the job was still running). NotReady: the node lifecycle controller's verdict "
        "(grace 50 s). First pod failed: the first main container that ended with an error after the fault."
    )
    block = model.table("faults", COLUMNS, rows_of(runs), caption=caption)
    model.update(SECTION, [block], title=TITLE, by="`python -m bench.real_runs`, `python -m bench.node_faults`")
    results.write()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=",".join(f"{c}/{f}" for c in CHARTS for f in FAULTS))
    parser.add_argument("--cluster-name", default="nodes")
    parser.add_argument("--cap", type=float, default=900, help="seconds a case may take after its install")
    args = parser.parse_args(argv)
    handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name)).start()
    if len(handle.real_nodes) < 2:
        raise SystemExit(
            f"cluster {args.cluster_name} has {len(handle.real_nodes)} real node(s); faults need 2 or more"
        )
    done = (common.saved("node_faults") or {}).get("runs", [])
    for spec in args.cases.split(","):
        name, fault = spec.split("/")
        row = one(handle, name, fault, args.cap)
        done = [r for r in done if (r["case"], r["fault"]) != (name, fault)] + [row]
        common.save("node_faults", {"machine": common.machine(), "runs": done})
        print(
            {k: row[k] for k in ("case", "fault", "node", "verdict", "verdict_s", "not_ready_s", "problem")}, flush=True
        )
    report(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
