"""The API server's verdict on rendered objects, without storing anything: a create with ``dryRun=All``.

``dry_run_create`` is one object's verdict (validated and admitted, never stored). ``ServerCheck`` is the reference
mode of ``dlcharts validate --server``: every object of a render goes to a throwaway embedded API server of the
render's Kubernetes minor (the pinned one, or the oldest the charts support), in a namespace of its own, with
strict field validation as ``kubectl apply`` and Helm 4 send it; each refusal becomes an ``api-server`` finding.
tests/cluster/api_parity/test_api_parity.py uses the same call for the verdicts it compares the offline validator with.
"""

from __future__ import annotations

import contextlib
from typing import Any

from dlcharts.apirules import minor as _minor
from dlcharts.errors import ClusterError, DLChartsError
from dlcharts.findings import Finding
from dlcharts.install.kube import Kube, status_message
from dlcharts.render import K8sObject, Rendered

#: the throwaway clusters' names (a running one of the same name is reused, and then left running)
SERVER_CLUSTER = "dlcharts-validate"


def server_cluster_name(kube_version: str) -> str:
    """The throwaway cluster of ``kube_version``'s minor: SERVER_CLUSTER at the pinned version, else the minor
    appended ("dlcharts-validate-1-29")."""
    from dlcharts.cluster.binaries import KUBERNETES_VERSION

    wanted = _minor(kube_version)
    return SERVER_CLUSTER if wanted == _minor(KUBERNETES_VERSION) else f"{SERVER_CLUSTER}-{wanted.replace('.', '-')}"


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


class ServerCheck:
    """``findings(rendered)``: the throwaway API server's refusals of a render's objects. Its clusters (fake nodes
    only) start on first use, one per minor, and ``close()`` stops those it started. Objects of kinds the server
    does not serve (custom resources: it has no CRDs) are not sent; ``unserved`` names them."""

    NAMESPACE = "dlcharts-validate"

    def __init__(self, kube_versions: list[str]) -> None:
        """``kube_versions``: the renders' versions, each of a minor the embedded control plane runs (else an
        error naming those, before anything starts)."""
        from dlcharts.cluster.binaries import CLUSTER_VERSIONS

        self._versions = {_minor(v): v for v in CLUSTER_VERSIONS}
        for wanted in kube_versions:
            if _minor(wanted) not in self._versions:
                raise DLChartsError(
                    f"--server: no API server of Kubernetes {_minor(wanted)} here; the embedded control plane runs "
                    f"{' and '.join(self._versions.values())}: validate with --kube-version "
                    f"{' or --kube-version '.join(m + '.0' for m in self._versions)}"
                )
        self._stack = contextlib.ExitStack()
        self._kubes: dict[str, Kube] = {}
        self.unserved: set[str] = set()

    def _kube(self, kube_version: str) -> Kube:
        minor = _minor(kube_version)
        if minor in self._kubes:
            return self._kubes[minor]
        version = self._versions[minor]
        from dlcharts.cluster import ClusterConfig, EmbeddedCluster
        from dlcharts.install.namespaces import create_namespace

        config = ClusterConfig(name=server_cluster_name(version), real_node=False, kubernetes_version=version)
        handle = self._stack.enter_context(EmbeddedCluster(config))
        kube = self._stack.enter_context(Kube.from_kubeconfig(handle.kubeconfig))
        if kube.request("GET", f"/api/v1/namespaces/{self.NAMESPACE}").status == 404:  # else a reused cluster's
            create_namespace(kube, self.NAMESPACE, "privileged")  # Pod Security is a policy check's business
        self._kubes[minor] = kube
        return kube

    def findings(self, rendered: Rendered) -> list[Finding]:
        version = rendered.request.kube_version
        kube = self._kube(version)
        found = []
        for obj in rendered:  # hooks too: `helm test` creates them
            if not served(kube, obj):
                self.unserved.add(f"{obj.key.api_version} {obj.kind}")
                continue
            if obj.kind == "Pod":
                self._provide(kube, obj.body.get("spec") or {})
            status, doc = dry_run_create(kube, obj.body, self.NAMESPACE, strict=True)
            found += [
                Finding(obj.source, obj.ref(), field, message, "api-server", version)
                for field, message in refusal(status, doc)
            ]
        return found

    def _provide(self, kube: Kube, spec: dict[str, Any]) -> None:
        """Create what a Pod's admission looks up and the target cluster is expected to hold (its RuntimeClass,
        PriorityClass and ServiceAccount: the chart names them, it does not ship them all), so that their absence
        on a throwaway server is not taken for a fault of the pod."""
        wanted: list[tuple[str, str, str, Any, dict[str, Any]]] = [
            ("/apis/node.k8s.io/v1/runtimeclasses", "RuntimeClass", "node.k8s.io/v1", spec.get("runtimeClassName"),
             {"handler": spec.get("runtimeClassName")}),
            ("/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass", "scheduling.k8s.io/v1",
             spec.get("priorityClassName"), {"value": 0}),
            (f"/api/v1/namespaces/{self.NAMESPACE}/serviceaccounts", "ServiceAccount", "v1",
             spec.get("serviceAccountName"), {}),
        ]  # fmt: skip
        for path, kind, api_version, name, fields in wanted:
            if isinstance(name, str) and name and name != "default":
                body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
                body.update(fields)
                kube.request("POST", path, body=body)  # 409 when it is there: fine; a bad name: the pod says so

    def close(self) -> None:
        self._stack.close()
