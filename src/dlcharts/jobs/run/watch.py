"""The release's start watch seen from a run: after a failure, its verdict and how the release's pods ended
(:func:`start_watch_aftermath`); what it did about lost nodes (:func:`node_losses`); at the end of a run, a watch
that reaches the API server only through the run's relay suspended (:func:`suspend_start_watch`)."""

from __future__ import annotations

import time
from typing import Any

from dlcharts.install import Kube, Release
from dlcharts.install.state import INSTANCE_LABEL, is_hook, job_outcome, owner_of
from dlcharts.jobs.run.logs import Write
from dlcharts.jobs.run.outcome import COMPONENT_LABEL, is_start_watch, parse_time

#: what the start watch may take beyond peerWait.timeoutSeconds + intervalSeconds to end every pod: its own
#: round trip, the Job controller's deletions, and the pods' termination grace (30 s by default)
START_WATCH_MARGIN = 60.0
#: the Job annotation in which the start watch says why it failed the release (dl-common.startWatch.annotation)
START_FAILURE = "dl-charts.io/start-failure"
#: the Job annotation in which it records the pods it deleted on a lost node (dl-common.startWatch.nodeLossAnnotation)
NODE_LOSS = "dl-charts.io/node-loss"


def node_losses(kube: Kube, release: Release) -> list[str]:
    """What the release's start watch did about lost nodes, as it recorded it on the release's Jobs (the latest
    note of each Job, once each)."""
    ns, name = release.namespace, release.name
    notes: list[str] = []
    for job in kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}"):
        note = (job["metadata"].get("annotations") or {}).get(NODE_LOSS)
        if note and note not in notes:
            notes.append(note)
    return [f"start watch: {note}" for note in notes]


def start_watch_aftermath(kube: Kube, release: Release, started: float, write: Write) -> list[str]:
    """After a failure: when the release has a start watch (dl-common's ``startWatch``), wait until every pod of
    the release has ended, up to the watch's bound (peerWait.timeoutSeconds after the Jobs started, plus
    intervalSeconds and :data:`START_WATCH_MARGIN`), so that the run shows the chart freeing what it held; then
    the watch's verdict and how long the pods took to end (from the install)."""
    ns, name = release.namespace, release.name
    jobs = kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}")
    watch = [j for j in jobs if is_start_watch(j)]
    if not watch:
        return []
    spec = watch[0]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in spec.get("env") or []}
    bound = int(env.get("DL_START_TIMEOUT") or 0) + int(env.get("DL_START_INTERVAL") or 0) + START_WATCH_MARGIN
    begun = [parse_time(j["status"]["startTime"]).timestamp() for j in jobs if (j.get("status") or {}).get("startTime")]
    deadline = time.monotonic() + max(0.0, (max(begun) if begun else time.time()) + bound - time.time())
    write(f"waiting up to {deadline - time.monotonic():.0f}s for the release's start watch to end every pod")
    live: list[dict[str, Any]] = []
    while True:
        pods = kube.items(f"/api/v1/namespaces/{ns}/pods", label_selector=f"{INSTANCE_LABEL}={name}")
        live = [p for p in pods if not is_hook(p) and (p.get("status") or {}).get("phase") in ("Pending", "Running")]
        if not live or time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    lines = []
    for job in kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}"):
        said = (job["metadata"].get("annotations") or {}).get(START_FAILURE)
        if said:
            lines.append(f"start watch: {said}")
            break
    lines.append(
        f"{len(live)} pod(s) still Pending or Running; `helm uninstall {name} -n {ns}` frees them"
        if live
        else f"every pod of the release ended {time.monotonic() - started:.0f}s after the install began"
    )
    return lines


def suspend_start_watch(kube: Kube, release: Release) -> list[str]:
    """Suspend the release's start watch Jobs whose pod still runs (the Job controller ends it): for a watch that
    reaches the API server through :func:`api_relay`, which ends with ``dlcharts run``. Without it the watch would
    retry against a closed port until its Job's backoffLimit. A watch that has failed the release (its verdict is on
    the Jobs) or whose pod has ended is left to finish as it did. Returns the Jobs suspended."""
    ns, name = release.namespace, release.name
    jobs = kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", label_selector=f"{INSTANCE_LABEL}={name}")
    pods = kube.items(f"/api/v1/namespaces/{ns}/pods", label_selector=f"{COMPONENT_LABEL}=start-watch")
    live = {
        owner[1]
        for pod in pods
        if (owner := owner_of(pod)) and (pod.get("status") or {}).get("phase") in ("Pending", "Running")
    }
    said = [job["metadata"].get("annotations") or {} for job in jobs]
    if any(a.get(START_FAILURE) or a.get(NODE_LOSS, "").startswith("failed the release") for a in said):
        return []  # the watch has failed the release: it exits right after (its pod may not have said so yet)
    suspended = []
    for job in jobs:
        running = job_outcome(job) is None and job["metadata"]["name"] in live
        if is_start_watch(job) and running and not job["spec"].get("suspend"):
            path = f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}"
            resp = kube.request("PATCH", path, body={"spec": {"suspend": True}},
                                content_type="application/merge-patch+json")  # fmt: skip
            if resp.status == 200:
                suspended.append(job["metadata"]["name"])
    return suspended
