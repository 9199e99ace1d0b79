"""The harness's name rules and Pod Security `restricted` checks give the real API server's verdict.

Each case is one object sent to the embedded kube-apiserver (v1.35.8) with a server-side dry run (``dryRun=All``:
validated and admitted, never stored) into a namespace that enforces Pod Security `restricted`, and run through
the harness's `dns-names` and `security-context` checks. The two verdicts (refused or accepted) must agree, both
ways: a rule stricter than the API server is a false finding for chart authors, a looser one a green run that
`helm install` then refuses.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dlcharts.cluster import ClusterHandle
from dlcharts.install import Kube
from dlcharts.install.namespaces import delete_namespace
from dlcharts.policies import run_policies
from dlcharts.render import K8sObject, ObjectKey

pytestmark = pytest.mark.cluster

RESTRICTED_CONTAINER = {
    "name": "main",
    "image": "busybox:1.37.0",
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    },
}
POD_SPEC = {"securityContext": {"runAsNonRoot": True}, "containers": [RESTRICTED_CONTAINER]}


def pod(pod_security: dict[str, Any] | None = None, container_security: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = copy.deepcopy(POD_SPEC)
    if pod_security is not None:
        spec["securityContext"] = pod_security
    spec["containers"][0]["securityContext"].update(container_security or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def named(kind: str, name: str) -> dict[str, Any]:
    labels = {"app": "x"}
    template = {"metadata": {"labels": labels}, "spec": copy.deepcopy(POD_SPEC)}
    bodies: dict[str, dict[str, Any]] = {
        "Service": {"apiVersion": "v1", "spec": {"selector": labels, "ports": [{"port": 80}]}},
        "ConfigMap": {"apiVersion": "v1", "data": {"a": "b"}},
        "Deployment": {"apiVersion": "apps/v1", "spec": {"selector": {"matchLabels": labels}, "template": template}},
        "Job": {"apiVersion": "batch/v1",
                "spec": {"template": {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}}},
    }  # fmt: skip
    return {**bodies[kind], "kind": kind, "metadata": {"name": name}}


CASES = {
    # names (Kubernetes 1.35: Service DNS-1035 label, most kinds DNS-1123 subdomain, Job <= 63 for its label)
    "service-starting-with-a-digit": named("Service", "9lives-metrics"),
    "service-with-a-dot": named("Service", "a.b"),
    "service-of-63": named("Service", "s" * 63),
    "service-of-64": named("Service", "s" * 64),
    "deployment-of-76": named("Deployment", "d" * 76),
    "deployment-of-254": named("Deployment", "d" * 254),
    "deployment-with-a-dot": named("Deployment", "a.b"),
    "deployment-upper-case": named("Deployment", "Web"),
    "configmap-starting-with-a-digit": named("ConfigMap", "9-settings"),
    "job-of-63": named("Job", "j" * 63),
    "job-of-64": named("Job", "j" * 64),
    # Pod Security restricted
    "restricted-pod": pod(),
    "runAsUser-without-runAsNonRoot": pod({"runAsUser": 1000}),
    "runAsNonRoot-on-the-container-only": pod({}, {"runAsNonRoot": True}),
    "container-runAsNonRoot-false-over-pod-true": pod(None, {"runAsNonRoot": False}),
    "pod-runAsNonRoot-false-container-true": pod({"runAsNonRoot": False}, {"runAsNonRoot": True}),
    "pod-runAsUser-0": pod({"runAsNonRoot": True, "runAsUser": 0}),
    "container-runAsUser-0": pod(None, {"runAsUser": 0}),
    "pod-seccomp-unconfined": pod({"runAsNonRoot": True, "seccompProfile": {"type": "Unconfined"}}),
    "container-adds-NET_BIND_SERVICE": pod(None, {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}),
    "container-adds-SYS_TIME": pod(None, {"capabilities": {"drop": ["ALL"], "add": ["SYS_TIME"]}}),
    "privilege-escalation-unset": pod(None, {"allowPrivilegeEscalation": None}),
}
PATHS = {"v1": "/api/v1", "apps/v1": "/apis/apps/v1", "batch/v1": "/apis/batch/v1"}


@pytest.fixture(scope="module")
def restricted(embedded_cluster: ClusterHandle) -> Iterator[tuple[Kube, str]]:
    name = f"parity-{uuid.uuid4().hex[:6]}"
    embedded_cluster.create_namespace(name, "restricted")
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        yield kube, name
        delete_namespace(kube, name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_harness_and_api_server_agree(restricted: tuple[Kube, str], case: str) -> None:
    kube, namespace = restricted
    body = CASES[case]
    plural = body["kind"].lower() + "s"
    resp = kube.request(
        "POST", f"{PATHS[body['apiVersion']]}/namespaces/{namespace}/{plural}", query={"dryRun": "All"}, body=body
    )
    assert resp.status in (200, 201, 403, 422), (resp.status, resp.doc)
    api_refuses = resp.status not in (200, 201)
    obj = K8sObject(ObjectKey(body["apiVersion"], body["kind"], namespace, body["metadata"]["name"]), body, "case")
    findings = run_policies([obj], checks=["dns-names", "security-context"])
    api_says = (resp.doc or {}).get("message", "") if api_refuses else "accepted"
    print(f"{case}: {'refused' if api_refuses else 'accepted'}")
    assert bool(findings) == api_refuses, (
        f"{case}: the API server says {api_says!r}; the harness says {[f.message for f in findings] or 'nothing'}"
    )
