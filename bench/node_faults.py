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

``--guarded``: the same charts as `dlcharts run` installs them, with their guard (the start watch, reaching the API
server through the run's relay on the first real node, `startWatch.nodeLoss` recover) and a checkpoint volume (a
claim of a folder both real nodes see, as an NFS share); the other real node is lost at a step of each chart's
:data:`GUARDED` case and stays lost. Recorded besides: when the guard had the lost node's pods evicted and deleted,
when a replacement pod trained again, and the step it resumed from.

Usage: .venv/bin/python -m bench.node_faults [--cases pytorch-dist/lose,...] [--guarded] [--cluster-name nodes]
[--real-nodes 2] [--cap 900] (starts the cluster with its real nodes unless it runs; writes
build/bench/node_faults[_guarded].json and bench/data/15-real-nodes.json's fault or guarded table)
"""

from __future__ import annotations

import argparse
import contextlib
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
from tests.support.cluster import CHECKPOINT_ARGS, checkpoint_volume


@dataclasses.dataclass(frozen=True)
class Case:
    chart: str
    helm_args: tuple[str, ...]
    step: str  # a log line of a training step, after which the fault comes
    victim: tuple[str, int]  # the role and index whose node the fault hits
    shown: str = ""  # the args as the tables show them, when they are too long to read


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
#: with the guard: sizes that end within minutes after the recovery, and checkpoints where the benchmark saves them
GUARDED: dict[str, Case] = {
    "pytorch-dist": Case("pytorch-dist", ("--set", "worker=2", "--set", "benchmark.steps=100",
                                           "--set", "checkpoint.everySteps=10"),
                         r"bench_ddp: step 30/", ("worker", 1)),
    "tensorflow-dist": Case("tensorflow-dist", ("--set", "worker=2", "--set", "benchmark.steps=300",
                                                 "--set", "checkpoint.everySteps=20"),
                            r"bench_tf: step 60/", ("worker", 1)),
    "mxnet-dist": Case("mxnet-dist", ("--set", "worker=2", "--set", "server=2", "--set", "benchmark.steps=100"),
                       r"bench_mx: step 20/", ("worker", 1)),
    "horovod-mpi": Case("horovod-mpi", ("--set", "worker=2", "--set", "benchmark.iterations=8",
                                         "--set", "benchmark.batchesPerIter=5", "--set", "checkpoint.everySteps=5"),
                        r"<stdout>:iteration 1:", ("worker", 1)),
    "cntk-dist": Case("cntk-dist", ("--set", "worker=2", "--set-json",
                                    f"cntk.python.command={json.dumps(mpi4py_program(120, 0.5))}"),
                      r"mpi4py: step 10/", ("worker", 1),
                      "--set worker=2 --set-json cntk.python.command=<mpi4py allreduce: 120 steps, 0.5 s apart>"),
    "jax-dist": Case("jax-dist", ("--set", "worker=2", "--set", "benchmark.steps=300"), r"bench_jax: step 30/",
                     ("worker", 1)),
    "deepspeed-dist": Case("deepspeed-dist", ("--set", "worker=2", "--set", "benchmark.steps=60",
                                               "--set", "checkpoint.everySteps=10"),
                           r"ds-bench: step 20/", ("worker", 1)),
}  # fmt: skip
#: a benchmark's line on resuming from its checkpoint: bench_ddp, bench_tf and ds-bench by step, horovod_bench by
#: iteration
RESUMED = re.compile(r"resumed from (?:step|iteration) (\d+)")


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


def one(handle: ClusterHandle, name: str, fault: str, cap: float, guarded: bool = False) -> dict[str, Any]:
    case = (GUARDED if guarded else CHARTS)[name]
    registry = handle.images.registry if handle.images else ""
    namespace = f"fault-{uuid.uuid4().hex[:6]}"
    path = common.ROOT / "charts" / case.chart
    relay_node = handle.real_node["name"] if guarded and handle.real_node else ""
    run.push_images(case.chart, registry, lambda _line: None)
    found: dict[str, Any] = {}
    lines: list[str] = []
    first_pods: set[str] = set()

    def since_fault() -> float:
        return round(time.monotonic() - float(found["at"]), 1)

    def inject() -> None:
        with Kube.from_kubeconfig(handle.kubeconfig) as kube:
            pods = kube.items(f"/api/v1/namespaces/{namespace}/pods")
            first_pods.update(p["metadata"]["name"] for p in pods)
            avoid = {relay_node} if guarded else _first_pod_nodes(kube, namespace)  # the relay is the guard's route
            victim = _victim_node(kube, namespace, *case.victim, avoid)
            if victim is None:
                found["error"] = f"no node of {case.victim} apart from {sorted(avoid)}"
                return
            held = {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == victim}
            found["held"] = sorted(held)
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
                    found["not_ready"] = since_fault()
                if guarded and "deleted" not in found:  # the guard's work on the lost node's pods
                    there = [
                        p for p in (kube.get_or_none(f"/api/v1/namespaces/{namespace}/pods/{n}") for n in held) if p
                    ]
                    if "evicted" not in found and (
                        not there or any(p["metadata"].get("deletionTimestamp") for p in there)
                    ):
                        found["evicted"] = since_fault()
                    if not there:
                        found["deleted"] = since_fault()
                time.sleep(1)

    clock = time.monotonic()

    def write(line: str) -> None:
        since = time.monotonic() - found.get("at", clock)
        lines.append(f"{'fault' if 'at' in found else 'install'} {since:+7.1f}s {line}")
        if "injecting" not in found and re.search(case.step, line):
            found["injecting"] = True
            threading.Thread(target=inject, daemon=True).start()
        elif "at" in found and re.search(re.sub(r"\d+", r"\\d+", case.step), line):
            pod = line[1:].split("/")[0]
            if first_pods and pod not in first_pods and "again" not in found:
                found["again"] = since_fault()  # a replacement pod trains
        if "at" in found and (resumed := RESUMED.search(line)):
            found["resumed"] = int(resumed[1])

    load = common.load()
    with Kube.from_kubeconfig(handle.kubeconfig) as kube, contextlib.ExitStack() as stack:
        run.prepare_namespace(kube, namespace, path, write=lambda _line: None)
        helm_args = case.helm_args
        api_server = None
        if guarded:
            assert handle.real_node is not None
            api_server = stack.enter_context(run.api_relay(handle.server, handle.state_dir, handle.real_node["ip"]))
            folder = common.WORK / "node_faults" / "checkpoints" / namespace
            stack.enter_context(checkpoint_volume(kube, namespace, folder))
            helm_args += CHECKPOINT_ARGS
        values = run.cpu_values(case.chart, registry, spread=True, api_server=api_server)
        release = Release(find_helm(), handle.kubeconfig, "fault", namespace)
        result = run.run_job(kube, release, path, values, helm_args, timeout=cap, write=write)
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
    guard_said = [line for line in result.aftermath if line.startswith("start watch: node ")]
    acted = re.search(r" deleted at (\S+?);", guard_said[0]) if guard_said else None
    return {
        "case": name,
        "chart": case.chart,
        "args": " ".join(case.helm_args),
        "fault": fault,
        "guarded": guarded,
        "held": found.get("held"),
        "guard_said": guard_said,
        "guard_deleted_s": round(run.parse_time(acted[1]).timestamp() - found["at_wall"], 1) if acted else None,
        "evicted_s": found.get("evicted"),
        "deleted_s": found.get("deleted"),
        "again_s": found.get("again"),
        "resumed": found.get("resumed"),
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
    _write(model.table("faults", COLUMNS, rows_of(runs), caption=caption))


def _write(block: Any) -> None:
    """``block`` into section 15 (in place of the block of its id), and results.md written again."""
    model.update(SECTION, [block], title=TITLE, by="`python -m bench.real_runs`, `python -m bench.node_faults`")
    results.write()


GUARDED_COLUMNS = [
    model.column("case", align="left"),
    model.column("values", align="left"),
    model.column("lost at", align="left"),
    model.column("lost with the node", align="left"),
    model.column("NotReady s", "{:.0f}"),
    model.column("evicted s", "{:.0f}"),
    model.column("guard deleted s", "{:.0f}"),
    model.column("training again s", "{:.0f}"),
    model.column("resumed from", align="left"),
    model.column("verdict", align="left"),
    model.column("fault → verdict s", "{:.0f}"),
    model.column("load 1m before", "{:.2f}"),
]


def lost_at(case: Case) -> str:
    """The step of ``case`` at which the node is lost, as a reader says it (step 30, iteration 1)."""
    found = re.search(r"(step|iteration) \d+", case.step)
    return found[0] if found else case.step


def guarded_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    def resumed(r: dict[str, Any]) -> str:
        unit = "iteration" if r["chart"] == "horovod-mpi" else "step"
        return f"{unit} {r['resumed']}" if r.get("resumed") is not None else "start (no checkpoint kept)"

    return [
        [
            r["case"], f"`{GUARDED[r['case']].shown or r['args']}`", lost_at(GUARDED[r["case"]]),
            ", ".join(r.get("held") or []),
            r["not_ready_s"], r["evicted_s"], r["guard_deleted_s"], r["again_s"], resumed(r), r["verdict"],
            r["verdict_s"], r["load_before"]["1m"],
        ]
        for r in runs
    ]  # fmt: skip


def report_guarded(runs: list[dict[str, Any]]) -> None:
    caption = (
        "`python -m bench.node_faults --guarded` on 2 real nodes, Kubernetes' default node-monitor settings: each "
        "chart as `dlcharts run` installs it, with its guard (`startWatch.nodeLoss` recover, the default, after "
        "`nodeLossSeconds` 20) and a checkpoint volume (a claim of a folder both real nodes see); the real node that "
        "is not the guard's relay's is lost at the case's step and stays lost. Times from the loss: the node "
        "NotReady, the first of its pods evicted and every one deleted (seen by the bench), the guard's deletion (its "
        "own note on the Jobs), a replacement pod's first training step. Resumed from: the step the replacement "
        "ranks' benchmark restored (mxnet, jax and cntk's benchmarks keep no checkpoint yet: they start over). "
        "verdict: the Jobs' end, or cap."
    )
    _write(model.table("guarded", GUARDED_COLUMNS, guarded_rows(runs), caption=caption))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", help="chart/fault,... (default: every case of the mode, lose and partition)")
    parser.add_argument("--guarded", action="store_true", help="with the guard and checkpoints; node loss only")
    parser.add_argument("--cluster-name", default="nodes")
    parser.add_argument("--real-nodes", type=int, default=2, help="the cluster's real nodes (2 or more)")
    parser.add_argument("--cap", type=float, default=900, help="seconds a case may take after its install")
    args = parser.parse_args(argv)
    cases = GUARDED if args.guarded else CHARTS
    specs = args.cases or ",".join(f"{c}/{f}" for c in cases for f in (("lose",) if args.guarded else FAULTS))
    saved_as = "node_faults_guarded" if args.guarded else "node_faults"
    handle = EmbeddedCluster(ClusterConfig(name=args.cluster_name, real_nodes=args.real_nodes)).start()
    if len(handle.real_nodes) < 2:
        raise SystemExit(
            f"cluster {args.cluster_name} has {len(handle.real_nodes)} real node(s); faults need 2 or more"
        )
    done = (common.saved(saved_as) or {}).get("runs", [])
    for spec in specs.split(","):
        name, fault = spec.split("/")
        if name not in cases or fault not in FAULTS or (args.guarded and fault != "lose"):
            raise SystemExit(
                f"no case {spec}: the cases are {', '.join(cases)}, each /lose"
                + ("" if args.guarded else " or /partition")
            )
        row = one(handle, name, fault, args.cap, guarded=args.guarded)
        done = [r for r in done if (r["case"], r["fault"]) != (name, fault)] + [row]
        common.save(saved_as, {"machine": common.machine(), "runs": done})
        keys = ("case", "fault", "node", "verdict", "verdict_s", "not_ready_s", "again_s", "resumed", "problem")
        print({k: row.get(k) for k in keys}, flush=True)
    (report_guarded if args.guarded else report)(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
