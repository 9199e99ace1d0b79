"""The reference mode of ``dlcharts validate --server``: every object of a render goes to a throwaway embedded API
server of the render's Kubernetes minor (the pinned one, or the oldest the charts support), in a namespace of its
own, as a dry-run create (dlcharts.install.dryrun) with strict field validation as ``kubectl apply`` and Helm 4 send
it; each refusal becomes an ``api-server`` finding."""

from __future__ import annotations

import contextlib
from typing import Any

from dlcharts.cluster.config import ClusterConfig
from dlcharts.cluster.embedded import EmbeddedCluster
from dlcharts.errors import DLChartsError
from dlcharts.findings import Finding
from dlcharts.host.binaries import CLUSTER_VERSIONS, KUBERNETES_VERSION
from dlcharts.install.dryrun import dry_run_create, refusal, served
from dlcharts.install.kube import Kube
from dlcharts.install.namespaces import create_namespace
from dlcharts.render import Rendered
from dlcharts.utils.kubeversion import minor_text

#: the throwaway clusters' names (a running one of the same name is reused, and then left running)
SERVER_CLUSTER = "dlcharts-validate"


def server_cluster_name(kube_version: str) -> str:
    """The throwaway cluster of ``kube_version``'s minor: SERVER_CLUSTER at the pinned version, else the minor
    appended ("dlcharts-validate-1-29")."""
    wanted = minor_text(kube_version)
    return (
        SERVER_CLUSTER if wanted == minor_text(KUBERNETES_VERSION) else f"{SERVER_CLUSTER}-{wanted.replace('.', '-')}"
    )


class ServerCheck:
    """``findings(rendered)``: the throwaway API server's refusals of a render's objects. Its clusters (fake nodes
    only) start on first use, one per minor, and ``close()`` stops those it started. Objects of kinds the server
    does not serve (custom resources: it has no CRDs) are not sent; ``unserved`` names them."""

    NAMESPACE = "dlcharts-validate"

    def __init__(self, kube_versions: list[str]) -> None:
        """``kube_versions``: the renders' versions, each of a minor the embedded control plane runs (else an
        error naming those, before anything starts)."""
        self._versions = {minor_text(v): v for v in CLUSTER_VERSIONS}
        for wanted in kube_versions:
            if minor_text(wanted) not in self._versions:
                raise DLChartsError(
                    f"--server: no API server of Kubernetes {minor_text(wanted)} here; the embedded control plane runs "
                    f"{' and '.join(self._versions.values())}: validate with --kube-version "
                    f"{' or --kube-version '.join(m + '.0' for m in self._versions)}"
                )
        self._stack = contextlib.ExitStack()
        self._kubes: dict[str, Kube] = {}
        self.unserved: set[str] = set()

    def _kube(self, kube_version: str) -> Kube:
        minor = minor_text(kube_version)
        if minor in self._kubes:
            return self._kubes[minor]
        version = self._versions[minor]
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
