"""Reading a release's objects from the cluster (:func:`observe_release`) and what they say: a Job's outcome, a
pod's GPUs, conditions, owner and waiting containers, and which nodes a DaemonSet belongs on."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from dlcharts.install.kube import Kube
from dlcharts.policies import is_gpu_resource

INSTANCE_LABEL = "app.kubernetes.io/instance"
_NODE_TAINTS_TOLERATED_BY_DAEMONSETS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/network-unavailable",
    }
)


@dataclasses.dataclass
class ReleaseState:
    """A release's objects (by its instance label), its namespace's events and the cluster's nodes."""

    jobs: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    daemonsets: list[dict[str, Any]]
    deployments: list[dict[str, Any]]
    statefulsets: list[dict[str, Any]]
    events: list[dict[str, Any]]
    nodes: list[dict[str, Any]]


def observe_release(
    kube: Kube, namespace: str, release: str, nodes: list[dict[str, Any]] | None = None
) -> ReleaseState:
    """Read the :class:`ReleaseState` of ``release`` in ``namespace`` (``nodes`` when already read)."""
    sel = f"{INSTANCE_LABEL}={release}"
    ns = quote(namespace)
    return ReleaseState(
        jobs=kube.items(f"/apis/batch/v1/namespaces/{ns}/jobs", sel),
        pods=kube.items(f"/api/v1/namespaces/{ns}/pods", sel),
        daemonsets=kube.items(f"/apis/apps/v1/namespaces/{ns}/daemonsets", sel),
        deployments=kube.items(f"/apis/apps/v1/namespaces/{ns}/deployments", sel),
        statefulsets=kube.items(f"/apis/apps/v1/namespaces/{ns}/statefulsets", sel),
        events=kube.items(f"/api/v1/namespaces/{ns}/events"),
        nodes=nodes if nodes is not None else kube.items("/api/v1/nodes"),
    )


def object_name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def conditions_by_type(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every condition of an object by type (all of them, not only the first)."""
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or []}


def _true(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    cond = conditions_by_type(obj).get(kind)
    return cond if cond and cond.get("status") == "True" else None


def job_outcome(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """("succeeded" | "failed", detail) once a Job is decided, from all its conditions; None while running.

    Success: Complete or SuccessCriteriaMet (a successPolicy was met; Complete follows). Failure: Failed or
    FailureTarget (the controller has decided to fail the Job and is cleaning up).
    """
    for kind in ("Failed", "FailureTarget"):
        cond = _true(job, kind)
        if cond:
            return "failed", f"{kind}: {cond.get('reason', '')}: {cond.get('message', '')}".rstrip(": ")
    for kind in ("Complete", "SuccessCriteriaMet"):
        cond = _true(job, kind)
        if cond:
            return "succeeded", kind
    return None


def pod_gpus(pod: Mapping[str, Any]) -> dict[str, int]:
    """GPU-like extended resources (``*/gpu*``, ``nvidia.com/*``, ``amd.com/*``) in the pod's container limits."""
    total: dict[str, int] = {}
    spec = pod.get("spec") or {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for name, value in ((container.get("resources") or {}).get("limits") or {}).items():
            if is_gpu_resource(name):
                with contextlib.suppress(ValueError):
                    total[name] = total.get(name, 0) + int(str(value))
    return total


def owner_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind")), str(ref.get("name"))
    return None


def waiting_containers(pod: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(container, reason, message) for every container (init ones included) waiting."""
    status = pod.get("status") or {}
    out = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            out.append((str(cs.get("name")), str(waiting.get("reason", "")), str(waiting.get("message", ""))))
    return out


def is_hook(obj: Mapping[str, Any]) -> bool:
    return "helm.sh/hook" in ((obj.get("metadata") or {}).get("annotations") or {})


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_ready(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and bool(_true(pod, "Ready"))


def _match_expression(expr: Mapping[str, Any], value: str | None) -> bool:
    op, values = expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if op == "Gt" else left < right
    return False


def node_matches(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether a pod (template) spec may run on ``node`` as a DaemonSet pod: nodeSelector, required node
    affinity (terms ORed, expressions ANDed; matchFields on metadata.name) and NoSchedule/NoExecute taints
    against the tolerations (plus those the DaemonSet controller adds to every DaemonSet pod)."""
    meta = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        fields = {"metadata.name": str(meta.get("name"))}

        def term_ok(term: Mapping[str, Any]) -> bool:
            exprs = term.get("matchExpressions") or []
            field_exprs = term.get("matchFields") or []
            if not exprs and not field_exprs:
                return False  # an empty term matches no node
            return all(_match_expression(e, labels.get(str(e.get("key")))) for e in exprs) and all(
                _match_expression(e, fields.get(str(e.get("key")))) for e in field_exprs
            )

        if not any(term_ok(t) for t in terms):
            return False
    tolerations = pod_spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if taint.get("key") in _NODE_TAINTS_TOLERATED_BY_DAEMONSETS:
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and str(toleration.get("value") or "") == str(
        taint.get("value") or ""
    )


def daemonset_nodes(daemonset: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names of the nodes a DaemonSet should run on, computed from its pod template and the nodes' labels."""
    spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    return {str(n["metadata"]["name"]) for n in nodes if node_matches(spec, n)}
