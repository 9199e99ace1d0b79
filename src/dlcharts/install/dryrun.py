"""The API server's verdict on rendered objects, without storing anything: a create with ``dryRun=All``.

``dry_run_create`` is one object's verdict (validated and admitted, never stored) on any cluster; ``refusal`` reads
its causes. ``dlcharts validate --server`` (dlcharts.cluster.server_check) sends every object of a render this way,
and tests/cluster/api_parity/test_api_parity.py uses the same call for the verdicts it compares the offline
validator with.
"""

from __future__ import annotations

from typing import Any

from dlcharts.errors import ClusterError
from dlcharts.install.kube import Kube, status_message
from dlcharts.render import K8sObject


def dry_run_create(kube: Kube, body: dict[str, Any], namespace: str, strict: bool = False) -> tuple[int, Any]:
    """POST ``body`` with ``dryRun=All`` (into ``namespace`` when its kind is namespaced): the HTTP status and the
    reply (the object as it would be stored, or a Status). ``strict``: unknown or duplicate fields are refused
    (``fieldValidation=Strict``) rather than dropped with a warning."""
    res = kube.resource_for(str(body["apiVersion"]), str(body["kind"]))
    if res.namespaced:
        body = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
    query = {"dryRun": "All", "fieldManager": "dlcharts"}
    if strict:
        query["fieldValidation"] = "Strict"
    resp = kube.request("POST", res.path(namespace), query=query, body=body)
    return resp.status, resp.doc


def refusal(status: int, doc: Any) -> list[tuple[str, str]]:
    """(field, message) of each cause of a refusal ([] when the status is a success)."""
    if status in (200, 201):
        return []
    causes = ((doc.get("details") or {}).get("causes") or []) if isinstance(doc, dict) else []
    if not causes:
        return [("", status_message(doc))]
    return [(str(c.get("field", "")), str(c.get("message", ""))) for c in causes]


def served(kube: Kube, obj: K8sObject) -> bool:
    """Whether the server serves the object's kind with create (a custom resource needs its CRD installed)."""
    try:
        res = kube.resource_for(obj.key.api_version, obj.kind)
    except ClusterError:
        return False
    return "create" in res.verbs
