"""How a run ended: each pod (node, phase, exit code, duration), each Job's verdict, and the summary printed."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from dlcharts.install import Kube
from dlcharts.install.state import INSTANCE_LABEL, is_hook, job_outcome, owner_of

COMPONENT_LABEL = "app.kubernetes.io/component"


@dataclasses.dataclass
class PodOutcome:
    name: str
    node: str
    phase: str
    exit_code: int | None  # of the main container (None: it never ended)
    seconds: float | None  # main container from start to end
    owner: str  # Job/<name>

    @classmethod
    def of(cls, pod: dict[str, Any]) -> PodOutcome:
        status = pod.get("status") or {}
        main = pod["spec"]["containers"][0]["name"]
        exit_code = seconds = None
        for container in status.get("containerStatuses") or []:
            ended = (container.get("state") or {}).get("terminated")
            if container["name"] == main and ended:
                exit_code = int(ended.get("exitCode", -1))
                if ended.get("startedAt") and ended.get("finishedAt"):
                    seconds = (parse_time(ended["finishedAt"]) - parse_time(ended["startedAt"])).total_seconds()
        return cls(
            pod["metadata"]["name"],
            pod["spec"].get("nodeName") or "-",
            str(status.get("phase")),
            exit_code,
            seconds,
            "/".join(owner_of(pod) or ()) or "-",
        )


@dataclasses.dataclass
class RunResult:
    ok: bool
    seconds: float
    pods: list[PodOutcome]
    jobs: dict[str, str]  # job -> its final condition (Complete, SuccessCriteriaMet, Failed) or "running"
    problem: str = ""  # why it failed (with the release's diagnostics)
    #: seconds from the Jobs' end until no pod of the release was Pending or Running (None: some still were
    #: after :data:`SETTLE_SECONDS`, or the job failed)
    settled_seconds: float | None = None
    #: after a failure: the start watch's verdict and how the release's pods ended (lines of the summary)
    aftermath: list[str] = dataclasses.field(default_factory=list)


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


#: the phase shown for a pod that was deleted before the run ended: a Job whose success policy is met (e.g.
#: tensorflow-dist's worker 0) deletes its other pods that have not ended yet, including those whose main
#: container has just exited
DELETED = "Deleted"


def release_pods(
    kube: Kube, namespace: str, release: str, seen: Mapping[str, dict[str, Any]] | None = None
) -> list[PodOutcome]:
    """The release's pods, and those of ``seen`` (name -> last state) that are gone, in phase Deleted."""
    pods = kube.items(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"{INSTANCE_LABEL}={release}")
    outcomes = [PodOutcome.of(p) for p in pods if not is_hook(p) and not is_start_watch(p)]
    present = {pod.name for pod in outcomes}
    for name, pod in (seen or {}).items():
        if name not in present and not is_hook(pod) and not is_start_watch(pod):
            outcomes.append(dataclasses.replace(PodOutcome.of(pod), phase=DELETED))
    return sorted(outcomes, key=lambda p: (p.owner, p.name))


def is_start_watch(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` (a Job or pod) is the release's start watch (dl-common's ``startWatch``), which watches the
    training pods and is no part of the training: the summary's pods and Jobs leave it out."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(COMPONENT_LABEL) == "start-watch"


def job_verdicts(kube: Kube, namespace: str, release: str) -> dict[str, str]:
    """Each training Job's deciding condition (Complete, SuccessCriteriaMet, Failed, FailureTarget) or "running"
    (the start watch's Job left out)."""
    out = {}
    for job in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs", label_selector=f"{INSTANCE_LABEL}={release}"):
        if is_start_watch(job):
            continue
        outcome = job_outcome(job)
        out[job["metadata"]["name"]] = outcome[1].split(":")[0] if outcome else "running"
    return out


#: how long after the Jobs' end :func:`run_job` waits for the release's other pods (watched roles, workers a
#: success policy no longer needs) to end, so that the summary shows how they ended
SETTLE_SECONDS = 120.0


def summary(result: RunResult) -> str:
    """A table of the pods (node, phase, exit code, duration), the Jobs' ends and the verdict."""
    row = "{:<36} {:<12} {:<10} {:>4} {:>9}"
    lines = [row.format("POD", "NODE", "PHASE", "EXIT", "DURATION")]
    for pod in result.pods:
        code = "-" if pod.exit_code is None else str(pod.exit_code)
        took = "-" if pod.seconds is None else f"{pod.seconds:.0f}s"
        lines.append(row.format(pod.name, pod.node, pod.phase, code, took))
    if any(pod.phase == DELETED for pod in result.pods):
        lines.append(
            f"{DELETED}: removed by its Job before it ended (success policy met, or failed); EXIT as last seen"
        )
    lines.append("jobs: " + ", ".join(f"{job} {state}" for job, state in sorted(result.jobs.items())))
    if result.ok:
        running = sum(1 for pod in result.pods if pod.phase in ("Pending", "Running"))
        lines.append(
            f"every pod ended {result.settled_seconds:.0f}s after the job completed"
            if result.settled_seconds is not None
            else f"{running} pod(s) still Pending or Running {SETTLE_SECONDS:.0f}s after the job completed"
        )
    lines.extend(result.aftermath)
    verdict = "succeeded" if result.ok else "FAILED"
    lines.append(f"job {verdict} in {result.seconds:.0f}s")
    return "\n".join(lines)
