"""Reading what each system's job did (bench.operators): its verdict (the custom resource's conditions, our
release's Jobs), its pods' times and states, the pods it made and the objects it left."""

from __future__ import annotations

import datetime
import json
from typing import Any

from dlcharts.install import Kube

#: the component label of our release's start watch (its Job and pod)
START_WATCH = "start-watch"


def parse_time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def left_objects(kube: Kube, namespace: str) -> dict[str, Any]:
    """What a job left in ``namespace``: objects by kind and their bytes (compact JSON as served; events and the
    namespace's own kube-root-ca.crt and default ServiceAccount left out)."""
    counts: dict[str, int] = {}
    size = 0
    largest: dict[str, Any] = {"kind": "", "bytes": 0}
    for res in kube.preferred_resources():
        if not res.namespaced or "list" not in res.verbs or res.kind in ("Event", "LocalSubjectAccessReview"):
            continue
        try:
            items = kube.items(res.path(namespace))
        except Exception:  # noqa: BLE001 - a kind that cannot be listed here (a removed API) counts nothing
            continue
        for item in items:
            name = item["metadata"]["name"]
            if (res.kind, name) in (("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")):
                continue
            item["metadata"].pop("managedFields", None)
            nbytes = len(json.dumps(item, separators=(",", ":")))
            counts[res.kind] = counts.get(res.kind, 0) + 1
            size += nbytes
            if nbytes > largest["bytes"]:
                largest = {"kind": res.kind, "bytes": nbytes}
    return {"objects": dict(sorted(counts.items())), "object_count": sum(counts.values()), "bytes": size,
            "largest": largest}  # fmt: skip


def condition_verdict(doc: dict[str, Any]) -> tuple[str, str] | None:
    """("Succeeded" or "Failed", when) once the custom resource has its verdict (a True condition of that type;
    JobSet-style "Complete" counts as Succeeded)."""
    for cond in (doc.get("status") or {}).get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Succeeded", "Complete", "Failed"):
            kind = "Failed" if cond["type"] == "Failed" else "Succeeded"
            return kind, str(cond.get("lastTransitionTime") or "")
    return None


def jobs_verdict(kube: Kube, namespace: str) -> datetime.datetime | None:
    """When our release's Jobs gave their verdict: the first Job's failure, or else the last training Job's
    completion (None while one runs). The start watch's own Job completes a moment after the others (it ends once
    they have), as an operator's pods end after its custom resource's verdict: its end counts among the pods'
    ("every pod ended"), not in the verdict."""
    failed, complete, running = [], [], False
    for job in kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs"):
        conditions = (job.get("status") or {}).get("conditions") or []
        ends = {c["type"]: parse_time(c["lastTransitionTime"]) for c in conditions if c.get("status") == "True"
                and c["type"] in ("SuccessCriteriaMet", "Complete", "FailureTarget", "Failed")}  # fmt: skip
        # the Job controller decides at FailureTarget and adds Failed once the pods it then ends are gone
        failure = ends.get("FailureTarget") or ends.get("Failed")
        failed += [failure] if failure else []
        if job["metadata"].get("labels", {}).get("app.kubernetes.io/component") == START_WATCH:
            continue
        # a Job with a successPolicy (pytorch-dist's hot spares) succeeds when it is met; it completes once the pods
        # it then ends are gone
        success = ends.get("SuccessCriteriaMet") or ends.get("Complete")
        complete += [success] if success else []
        running = running or not ends
    if failed:
        return min(failed)
    return None if running or not complete else max(complete)


def main_started(pod: dict[str, Any]) -> str | None:
    main = pod["spec"]["containers"][0]["name"]
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        state = status.get("state") or {}
        started = (state.get("terminated") or state.get("running") or {}).get("startedAt")
        if status["name"] == main and started:
            return str(started)
    return None


def pod_running(pod: dict[str, Any]) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return any("running" in (s.get("state") or {}) or "waiting" in (s.get("state") or {})
               for s in (pod.get("status") or {}).get("containerStatuses") or []) or not (pod.get("status") or {}).get(
        "containerStatuses")  # fmt: skip


def pods_created(events: list[dict[str, Any]]) -> int:
    """Pods made, from the ``Created pod`` events: a pod re-made under its own name (the v1 operator's) adds to its
    event's count."""
    return sum(int(e.get("count") or 1) for e in events if "Created pod" in (e.get("message") or ""))
