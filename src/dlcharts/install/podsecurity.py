"""Pod Security: the level each chart needs (ci/pod-security.yaml), the level a namespace enforces, and the API
server's verdict on a release's pods."""

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


def load_pod_security(path: Path) -> dict[str, PodSecurity]:
    """``chart -> PodSecurity`` from a file like ci/pod-security.yaml; a missing file means "all restricted".

    Format: ``<chart>: {level: privileged|baseline|restricted, reason: "why the chart needs it"}``.
    """
    if not path.is_file():
        return {}
    doc = yaml.safe_load(path.read_text()) or {}
    if not isinstance(doc, dict):
        raise ClusterError(f"{path}: expected a mapping chart -> {{level, reason}}, found {type(doc).__name__}")
    table: dict[str, PodSecurity] = {}
    for chart, entry in doc.items():
        where = f"{path}: {chart}"
        if not isinstance(entry, dict) or set(entry) - {"level", "reason"}:
            raise ClusterError(f"{where}: expected {{level: ..., reason: ...}} and nothing else, found {entry!r}")
        level, reason = entry.get("level"), str(entry.get("reason") or "").strip()
        if level not in POD_SECURITY_LEVELS:
            raise ClusterError(f"{where}.level: {level!r} is not one of {', '.join(POD_SECURITY_LEVELS)}")
        if level != DEFAULT_POD_SECURITY and not reason:
            raise ClusterError(f"{where}.reason: a chart that needs {level!r} must say why (reason: ...)")
        table[str(chart)] = PodSecurity(level, reason)
    return table


def pod_security_for(chart: str, table: Mapping[str, PodSecurity]) -> PodSecurity:
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
