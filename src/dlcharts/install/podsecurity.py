"""Pod Security: the level each chart needs (its Chart.yaml annotations), the level a namespace enforces, and the
API server's verdict on a release's pods."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from dlcharts.errors import ClusterError
from dlcharts.install.kube import Kube, status_message

POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
DEFAULT_POD_SECURITY = "restricted"
WORKLOAD_KINDS = frozenset({"Pod", "Job", "CronJob", "DaemonSet", "Deployment", "StatefulSet", "ReplicaSet"})


@dataclasses.dataclass(frozen=True)
class PodSecurity:
    level: str
    reason: str = ""


#: Chart.yaml annotations naming the level a chart's pods need, and why (a chart without them needs restricted)
LEVEL_ANNOTATION = "dl-charts/pod-security"
REASON_ANNOTATION = "dl-charts/pod-security-reason"


def chart_pod_security(chart: Path) -> PodSecurity:
    """The Pod Security level ``chart``'s pods need: its Chart.yaml annotations ``dl-charts/pod-security``
    (privileged, baseline or restricted) and ``dl-charts/pod-security-reason`` (required below restricted);
    restricted when it names none."""
    path = chart / "Chart.yaml"
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ClusterError(f"{path}: cannot read the chart's Pod Security level: {exc}") from None
    annotations = (doc.get("annotations") if isinstance(doc, dict) else None) or {}
    level = annotations.get(LEVEL_ANNOTATION, DEFAULT_POD_SECURITY)
    reason = str(annotations.get(REASON_ANNOTATION) or "").strip()
    if level not in POD_SECURITY_LEVELS:
        raise ClusterError(
            f"{path}: annotations.{LEVEL_ANNOTATION}: {level!r} is not one of {', '.join(POD_SECURITY_LEVELS)}"
        )
    if level != DEFAULT_POD_SECURITY and not reason:
        raise ClusterError(
            f"{path}: a chart that needs Pod Security {level!r} must say why: add annotations.{REASON_ANNOTATION}"
        )
    return PodSecurity(level, reason)


def pod_security_for(chart: str, table: Mapping[str, PodSecurity]) -> PodSecurity:
    """``chart``'s entry in a ``chart name -> PodSecurity`` table; restricted when it has none."""
    return table.get(chart, PodSecurity(DEFAULT_POD_SECURITY))


def stricter_level(level: str) -> str | None:
    """The next stricter Pod Security level (None for restricted)."""
    i = POD_SECURITY_LEVELS.index(level)
    return POD_SECURITY_LEVELS[i + 1] if i + 1 < len(POD_SECURITY_LEVELS) else None


def namespace_level(kube: Kube, namespace: str) -> str:
    ns = kube.get_or_none(f"/api/v1/namespaces/{quote(namespace)}") or {}
    level = (ns.get("metadata", {}).get("labels") or {}).get("pod-security.kubernetes.io/enforce", "none")
    return f"Pod Security enforce={level}"


def pod_security_problems(kube: Kube, namespace: str, objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """For every workload object: the API server's Pod Security warnings on a ``dryRun=All`` create (and its
    refusal of bare Pods). Empty when all pods would be admitted in ``namespace``."""
    problems = []
    for obj in objects:
        if obj.get("kind") not in WORKLOAD_KINDS:
            continue
        res = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
        body = json.loads(json.dumps(obj))
        body.setdefault("metadata", {})["namespace"] = namespace
        resp = kube.request("POST", res.path(namespace), query={"dryRun": "All", "fieldManager": "dlcharts"}, body=body)
        name = f"{obj['kind']}/{obj.get('metadata', {}).get('name')}"
        if resp.status not in (200, 201):
            problems.append(f"{name}: refused ({resp.status}): {status_message(resp.doc)}")
        problems += [f"{name}: {w}" for w in resp.warnings if "PodSecurity" in w]
    return problems
