"""One job on one system, as ``python -m bench.operators real`` and ``faults`` run it: an operator's job (the custom
resource made from our render, bench.operators.jobs), watched until its verdict and until every pod has ended, or our
chart as ``dlcharts run`` installs it; with a fault (bench.operators.faults), the times are from the fault."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

from bench import common, real_runs
from bench.operators.faults import Fault, Inject
from bench.operators.jobs import Job, config_maps, operator_job, render
from bench.operators.verdicts import (
    condition_verdict,
    jobs_verdict,
    left_objects,
    main_started,
    parse_time,
    pod_running,
    pods_created,
)
from dlcharts.helm import find_helm
from dlcharts.install import Kube
from dlcharts.install.namespaces import delete_namespace
from dlcharts.jobs import run
from tests.support import cluster as cluster_support


def create_job(kube: Kube, path: str, namespace: str, docs: list[dict[str, Any]], resource: dict[str, Any],
               label: str) -> None:  # fmt: skip
    """The render's ConfigMaps (:func:`config_maps`) and the operator's custom resource made in ``namespace``
    (POSTed to ``path``); ``label`` names the resource if the API server refuses it."""
    for doc in config_maps(docs):
        doc["metadata"]["namespace"] = namespace
        kube.apply(doc)
    resource["metadata"]["namespace"] = namespace
    resp = kube.request("POST", path, body=resource)
    if resp.status != 201:
        raise SystemExit(f"{label} refused: {resp.doc}")


@dataclasses.dataclass
class Watch:
    """What :func:`watch` saw of an operator's job (times from ``time.monotonic()``)."""

    started: float
    #: what the fault did and when (``at``): None until it is injected, and for a run without a fault
    faulted: dict[str, Any] | None
    first_step: float | None = None
    verdict: tuple[str, str] | None = None
    verdict_at: float | None = None
    ended_at: float | None = None
    pods: list[Any] = dataclasses.field(default_factory=list)
    #: the pods' uids: the MPI Operator makes its workers with no event saying so
    uids: set[str] = dataclasses.field(default_factory=set)


def checkpoint_volume(kube: Kube, namespace: str, wanted: bool) -> contextlib.AbstractContextManager[None]:
    """With ``wanted``: the job's checkpoint claim (tests.support.cluster.checkpoint_volume) for the block."""
    folder = common.WORK / "operators" / "checkpoints" / namespace
    return cluster_support.checkpoint_volume(kube, namespace, folder) if wanted else contextlib.nullcontext()


def resumed_from(kube: Kube, namespace: str, pods: list[Any]) -> int | None:
    """The step (or iteration) a benchmark of these pods logged that it resumed from, if one did."""
    for pod in pods:
        log = kube.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/log").doc
        if isinstance(log, str) and (found := re.findall(RESUMED, log)):
            return int(found[-1])
    return None


def first_step_logged(kube: Kube, namespace: str, pods: list[Any], step: str) -> bool:
    """Whether a pod whose main container has started logged the first training step (``step``)."""
    for pod in pods:
        if main_started(pod):
            log = kube.request("GET", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}/log")
            if isinstance(log.doc, str) and re.search(step, log.doc):
                return True
    return False


def watch(
    kube: Kube, namespace: str, path: str, step: str, cap: float, seen: Watch, inject: Inject | None,
    trigger: str | None = None,
) -> None:  # fmt: skip
    """Every second until the verdict of the custom resource at ``path`` and every pod has ended, or ``cap`` seconds
    from the start: the pods, the first training step (``inject`` then, or at ``trigger``'s line), the verdict and
    when each came."""
    while time.monotonic() - seen.started < cap:
        seen.pods = kube.items(f"/api/v1/namespaces/{namespace}/pods")
        seen.uids.update(str(p["metadata"]["uid"]) for p in seen.pods)
        if seen.first_step is None and first_step_logged(kube, namespace, seen.pods, trigger or step):
            seen.first_step = time.monotonic() - seen.started
            if inject is not None:
                at_wall = datetime.datetime.now(datetime.UTC)
                seen.faulted = {**inject(kube, namespace), "at": time.monotonic(), "at_wall": at_wall}
        faulted = seen.faulted
        if faulted is not None and "at_wall" in faulted:  # until the job trains again: a step in a newer container
            newer = [p for p in seen.pods if (t := main_started(p)) and parse_time(t) > faulted["at_wall"]]
            if first_step_logged(kube, namespace, newer, step):
                faulted["again_after_fault_s"] = round(time.monotonic() - faulted["at"], 1)
                if (step_resumed := resumed_from(kube, namespace, newer)) is not None:
                    faulted["resumed_from"] = step_resumed
                del faulted["at_wall"]
        if seen.verdict is None:
            seen.verdict = condition_verdict(kube.get(path))
            if seen.verdict is not None:
                seen.verdict_at = time.monotonic()
        if seen.verdict is not None and not any(pod_running(p) for p in seen.pods):
            seen.ended_at = time.monotonic()
            break
        # twice a second while a fault's job has not trained again, so that its time is at most about 0.5 s late
        time.sleep(0.5 if seen.faulted is not None and "at_wall" in seen.faulted else 1.0)


def pod_times(seen: Watch, started_at: datetime.datetime) -> tuple[float | None, float | None]:
    """When the last main container started (seconds from ``started_at``), and how long after the verdict's time the
    last container exited (None where there is none)."""
    starts = [parse_time(s) for s in (main_started(p) for p in seen.pods) if s]
    exits = [parse_time(str(st["terminated"]["finishedAt"])) for p in seen.pods
             for st in ((c.get("state") or {}) for c in (p.get("status") or {}).get("containerStatuses") or [])
             if "terminated" in st]  # fmt: skip
    after_verdict = None
    if seen.verdict and seen.verdict[1] and exits:
        after_verdict = round(max(0.0, (max(exits) - parse_time(seen.verdict[1])).total_seconds()), 1)
    return round((max(starts) - started_at).total_seconds(), 1) if starts else None, after_verdict


def fault_outcome(seen: Watch, events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a fault did, and the times from it (:attr:`Watch.faulted` set)."""
    assert seen.faulted is not None
    at = seen.faulted.pop("at")
    seen.faulted.pop("at_wall", None)  # it never trained again
    if "again_after_fault_s" in seen.faulted:
        seen.faulted.setdefault("resumed_from", 0)  # none logged: no checkpoint (faults without --checkpoint)
    verdict_at, ended_at = seen.verdict_at, seen.ended_at
    return {**seen.faulted, "verdict_after_fault_s": round(verdict_at - at, 1) if verdict_at else None,
            "ended_after_fault_s": round(ended_at - at, 1) if ended_at else None,
            "pods_made": max(pods_created(events), len(seen.uids)),
            "pods_left_running": sum(pod_running(p) for p in seen.pods),
            "events": sorted({str(e.get("reason")) for e in events})}  # fmt: skip


def run_operator(
    kube: Kube, job_name: str, job: Job, system: str, registry: str, cap: float, extra: tuple[str, ...] = (),
    fault: Fault | None = None, inject: Inject | None = None, checkpoint: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One job on ``system``; with ``fault``, the times that follow are from the fault: ``inject`` at its first
    training step, or the create for a fault made into the job (``Fault.breaks``); ``checkpoint``: the claim that
    ``extra``'s checkpoint volume names."""
    namespace = f"bench-{system}-{job.chart}-{uuid.uuid4().hex[:6]}"
    run.push_images(job.chart, registry, lambda _line: None)
    docs = render(job.chart, run.cpu_values(job.chart, registry), (*job.helm_args, *extra), namespace)
    name = "bench"
    resource = operator_job(job_name, system, docs, name, job.workers)
    if fault is not None and fault.breaks:
        fault.breaks(resource)
    api = kube.resource_for(resource["apiVersion"], resource["kind"])
    before = common.load()
    # no Pod Security level: the operators' own containers (the PyTorchJob workers' init container) meet none
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    with checkpoint_volume(kube, namespace, checkpoint):
        started, started_at = time.monotonic(), datetime.datetime.now(datetime.UTC)
        create_job(kube, api.path(namespace), namespace, docs, resource, resource["kind"])
        seen = Watch(started, None if fault is None or inject else {"at": started})
        watch(kube, namespace, api.path(namespace, name), job.steps, cap, seen, inject, job.trigger)
    all_started, after_verdict = pod_times(seen, started_at)
    left = left_objects(kube, namespace)
    events = kube.items(f"/api/v1/namespaces/{namespace}/events")
    delete_namespace(kube, namespace)
    outcome = fault_outcome(seen, events) if seen.faulted is not None else {}
    verdict, verdict_at, ended_at = seen.verdict, seen.verdict_at, seen.ended_at
    return {
        **outcome,
        "system": system,
        "kind": resource["kind"],
        "ok": bool(verdict and verdict[0] == "Succeeded"),
        "verdict": verdict[0] if verdict else "none (cap)",
        "pods": len(seen.pods),
        "wall_s": round(verdict_at - started, 1) if verdict_at else None,
        "all_started_s": all_started,
        "first_step_s": None if seen.first_step is None else round(seen.first_step, 1),
        "last_exit_after_verdict_s": after_verdict,
        "pods_ended_after_verdict_s": round(ended_at - verdict_at, 1) if ended_at and verdict_at else None,
        "load_before": before,
        "load_after": common.load(),
        **left,
    }


#: a benchmark's line on resuming from its checkpoint: by step (bench_ddp, bench_tf, ds-bench) or iteration (horovod)
RESUMED = r"resumed from (?:step|iteration) (\d+)"


def restarted(injected: str, line: str) -> bool:
    """Whether ``line``, a training-step line after the fault's, is the job training again: a step (or warm-up) count
    no later than the one the fault was injected at (a retry counts from its checkpoint or from the start)."""
    first, now = (re.search(r"(\d+)", text) for text in (injected.split("] ", 1)[-1], line.split("] ", 1)[-1]))
    return bool(first and now and int(now.group(1)) <= int(first.group(1)))


def fault_ours(
    kubeconfig: Path, job: Job, registry: str, extra: tuple[str, ...], cap: float, inject: Inject | None,
    spread: bool = False, api_server: str | None = None, checkpoint: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Our chart with a fault (bench.node_faults' way: ``dlcharts run``'s job, the step from its log): ``inject`` at
    the first training step, or, without it, a fault that ``extra`` made into the release, timed from the install;
    ``checkpoint``: the claim that ``extra``'s checkpoint volume names."""
    import threading

    from dlcharts.install import Release

    namespace = f"fault-ours-{uuid.uuid4().hex[:6]}"
    path = common.ROOT / "charts" / job.chart
    run.push_images(job.chart, registry, lambda _line: None)
    found: dict[str, Any] = {}

    def injecting() -> None:
        if job.fault_at:  # the operators' fault comes 0-1 s after the line (their logs read each second): so does
            time.sleep(1.0)  # ours, so that both find the checkpoint that the line's step saves right after it
        with Kube.from_kubeconfig(kubeconfig) as kube:
            assert inject is not None
            found.update(inject(kube, namespace), at=time.monotonic(), at_wall=time.time())

    def write(line: str) -> None:
        if os.environ.get("BENCH_LOG"):  # every log line, timed from the start, to see where a run spends its time
            print(f"{time.monotonic() - started:7.1f} {line}", flush=True)
        step = re.search(job.steps, line)
        if inject is not None and "injecting" not in found and re.search(job.trigger, line):
            found.update(injecting=True, injected_line=line)
            threading.Thread(target=injecting, daemon=True).start()
        elif (
            step
            and "injected_line" in found
            and "again_after_fault_s" not in found
            and ("resumed_from" in found or restarted(found["injected_line"], line))
        ):
            found["again_after_fault_s"] = round(time.monotonic() - found["at"], 1)
        resumed = re.search(RESUMED, line)
        if resumed and "at" in found:
            found["resumed_from"] = int(resumed.group(1))

    started = time.monotonic()
    with Kube.from_kubeconfig(kubeconfig) as kube:
        run.prepare_namespace(kube, namespace, path, write=lambda _line: None)
        release = Release(find_helm(), kubeconfig, "bench", namespace)
        values = run.cpu_values(job.chart, registry, spread=spread, api_server=api_server)
        if inject is None:
            found.update(at=time.monotonic(), at_wall=time.time())
        with checkpoint_volume(kube, namespace, checkpoint):
            result = run.run_job(kube, release, path, values, (*job.helm_args, *extra), timeout=cap, write=write)
            while True:  # until every pod has ended (a failed launcher's workers stop through their watchdog), or cap
                left_running = sum(pod_running(p) for p in kube.items(f"/api/v1/namespaces/{namespace}/pods"))
                if not left_running or time.monotonic() - found.get("at", started) > cap:
                    break
                time.sleep(1.0)
        ended = time.monotonic()
        verdict_at = jobs_verdict(kube, namespace)  # after the pods: the start watch's Jobs fail a moment after it
        events = kube.items(f"/api/v1/namespaces/{namespace}/events")
        delete_namespace(kube, namespace)
    at, at_wall = found.pop("at", None), found.pop("at_wall", None)
    found.pop("injecting", None)
    found.pop("injected_line", None)
    if "again_after_fault_s" in found:
        found.setdefault("resumed_from", 0)
    return {
        **found,
        "system": "ours",
        "kind": job.chart,
        "ok": result.ok,
        "verdict": "Succeeded" if result.ok else ("Failed" if verdict_at else "none (cap)"),
        "verdict_after_fault_s": round(verdict_at.timestamp() - at_wall, 1) if verdict_at and at_wall else None,
        "ended_after_fault_s": round(ended - at, 1) if at and not left_running else None,
        "pods_made": pods_created(events),
        "pods_left_running": left_running,
        "events": sorted({str(e.get("reason")) for e in events}),
        "problem": result.problem.splitlines()[0] if result.problem else "",
    }


def run_ours(kubeconfig: Path, job: Job, registry: str, nodes: int) -> dict[str, Any]:
    row = real_runs.one(job.chart, kubeconfig, registry, nodes, job.helm_args, measure=left_objects)
    return {
        "system": "ours",
        "kind": job.chart,
        "ok": row["ok"],
        "verdict": "Succeeded" if row["ok"] else "Failed",
        "pods": row["pods"],
        "wall_s": row["verdict_s"] or row["wall_s"],  # to the verdict, as the operators' condition
        "all_started_s": row["all_started_s"],
        "first_step_s": row["first_step_s"],
        "last_exit_after_verdict_s": row["last_exit_after_first_job_s"],
        "pods_ended_after_verdict_s": row["settled_s"],
        "load_before": row["load_before"],
        "load_after": row["load_after"],
        **{key: row[key] for key in ("objects", "object_count", "bytes", "largest")},
    }
