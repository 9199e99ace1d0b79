"""The state of a release as text, for the message of every :class:`~dlcharts.errors.ClusterError` of a wait."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlcharts.install.kube import Kube
from dlcharts.install.state import (
    INSTANCE_LABEL,
    ReleaseState,
    conditions_by_type,
    daemonset_nodes,
    object_name,
    observe_release,
    owner_of,
    pod_gpus,
    waiting_containers,
)
from dlcharts.policies import is_gpu_resource


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def _conditions(obj: Mapping[str, Any], explained: tuple[str, ...] = ()) -> str:
    """Every condition as Type=Status, with reason and message where True (or its type is in ``explained``)."""
    return (
        ", ".join(
            f"{c.get('type')}={c.get('status')}"
            + (
                f" ({c.get('reason')}: {c.get('message')})"
                if (c.get("status") == "True" or c.get("type") in explained) and c.get("message")
                else ""
            )
            for c in (obj.get("status") or {}).get("conditions") or []
        )
        or "none"
    )


def _served_items(kube: Kube, path: str, label_selector: str | None = None) -> list[dict[str, Any]]:
    """The items at ``path``; none where the cluster does not serve the kind (its CRD is not installed)."""
    resp = kube.request("GET", path, query={"labelSelector": label_selector} if label_selector else None)
    return list((resp.doc or {}).get("items") or []) if resp.status == 200 else []


def _queueing(kube: Kube, namespace: str, release: str, state: ReleaseState) -> list[str]:
    """Kueue's workloads of the release's Jobs and pods (why one waits: QuotaReserved's message), and the release's
    coscheduling PodGroup, where the cluster serves them."""
    lines = []
    owners = {object_name(o) for o in state.jobs + state.pods}
    workloads = [
        w for w in _served_items(kube, f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads")
        if owners & {r.get("name") for r in w["metadata"].get("ownerReferences") or []}
    ]  # fmt: skip
    if workloads:
        lines.append("Kueue workloads:")
    for workload in sorted(workloads, key=object_name):
        spec = workload.get("spec") or {}
        pod_sets = ", ".join(f"{ps.get('name')} x{ps.get('count')}" for ps in spec.get("podSets") or [])
        lines.append(
            f"  {object_name(workload)}: queue {spec.get('queueName')} pod sets {pod_sets}; "
            f"conditions: {_conditions(workload, explained=('QuotaReserved',))}"
        )
    groups = _served_items(
        kube, f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups", f"{INSTANCE_LABEL}={release}"
    )
    if groups:
        lines.append("PodGroups (coscheduling):")
    for group in groups:
        st, spec = group.get("status") or {}, group.get("spec") or {}
        lines.append(
            f"  {object_name(group)}: minMember {spec.get('minMember')} phase {st.get('phase', '-')} "
            f"scheduled {st.get('scheduled', 0)} running {st.get('running', 0)} succeeded {st.get('succeeded', 0)}"
        )
    return lines


def diagnostics(kube: Kube, namespace: str, release: str, max_events: int = 60) -> str:
    """The state of a release as text: Jobs (every condition), pods (phase, reason, node, GPUs, scheduling
    and waiting containers), DaemonSets (counts, nodes, expected nodes) and the namespace's latest events."""
    try:
        state = observe_release(kube, namespace, release)
    except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the original error
        return f"--- could not read the state of release {release} in {namespace}: {exc} ---"
    lines = [f"--- state of release {release} in namespace {namespace} ---", "Jobs:"]
    for job in state.jobs:
        st, spec = job.get("status") or {}, job.get("spec") or {}
        conds = _conditions(job)
        lines.append(
            f"  {object_name(job)}: completions {st.get('succeeded', 0)}/{spec.get('completions')} "
            f"active {st.get('active', 0)} failed {st.get('failed', 0)}"
            + (f" failedIndexes {st['failedIndexes']}" if st.get("failedIndexes") else "")
            + (" suspended" if spec.get("suspend") else "")
            + f"; conditions: {conds}"
        )
    if not state.jobs:
        lines.append("  (none)")
    lines += _queueing(kube, namespace, release, state)
    lines.append("Pods:")
    for pod in sorted(state.pods, key=object_name):
        st = pod.get("status") or {}
        gpus = ",".join(f"{k}={v}" for k, v in pod_gpus(pod).items()) or "no GPU"
        line = (
            f"  {object_name(pod)}: {st.get('phase')}{' (' + st['reason'] + ')' if st.get('reason') else ''} "
            f"node {pod['spec'].get('nodeName') or '-'} {gpus}"
        )
        if pod["spec"].get("schedulerName", "default-scheduler") != "default-scheduler":
            line += f" scheduler {pod['spec']['schedulerName']}"
        if pod["metadata"].get("deletionTimestamp"):
            line += " (terminating)"
        lines.append(line)
        sched = conditions_by_type(pod).get("PodScheduled")
        if sched and sched.get("status") == "False":
            lines.append(f"      PodScheduled=False {sched.get('reason')}: {sched.get('message')}")
        for container, reason, message in waiting_containers(pod):
            lines.append(f"      container {container} waiting: {reason} {message}".rstrip())
    if not state.pods:
        lines.append("  (none)")
    if state.daemonsets:
        lines.append("DaemonSets:")
        for ds in state.daemonsets:
            st = ds.get("status") or {}
            nodes = sorted(
                p["spec"].get("nodeName") or "-" for p in state.pods if owner_of(p) == ("DaemonSet", object_name(ds))
            )
            lines.append(
                f"  {object_name(ds)}: desired {st.get('desiredNumberScheduled', 0)} current "
                f"{st.get('currentNumberScheduled', 0)} updated {st.get('updatedNumberScheduled', 0)} ready "
                f"{st.get('numberReady', 0)} misscheduled {st.get('numberMisscheduled', 0)}; pods on {nodes}; "
                f"selector matches {sorted(daemonset_nodes(ds, state.nodes))}"
            )
    events = sorted(state.events, key=_event_time)[-max_events:]
    lines.append(f"Events in {namespace} (last {len(events)}):")
    for ev in events:
        obj = ev.get("involvedObject") or {}
        count = f" x{ev['count']}" if (ev.get("count") or 1) > 1 else ""
        lines.append(
            f"  {_event_time(ev)} {ev.get('type')} {ev.get('reason')} {obj.get('kind')}/{obj.get('name')}"
            f"{count}: {str(ev.get('message', '')).strip()}"
        )
    nodes = []
    for node in state.nodes:
        alloc = node.get("status", {}).get("allocatable") or {}
        gpu = ",".join(f"{k}={v}" for k, v in alloc.items() if is_gpu_resource(k))
        nodes.append(f"{object_name(node)}({gpu or 'no GPU'})")
    lines.append("Nodes: " + " ".join(nodes))
    return "\n".join(lines)
