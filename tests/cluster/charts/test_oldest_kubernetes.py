"""Every chart's default scenario, installed for real on the oldest Kubernetes minor the charts claim.

The charts say ``kubeVersion: ">=1.29.0-0"`` and gate newer fields by the cluster's version (a Job's successPolicy
from 1.33, ...). tests/fast/charts checks what they render for 1.29 against 1.29's schemas (and, with
k8s-validate@oldest, 1.29's own create validation); here a kube-apiserver, controller-manager and scheduler built
from k8s.io/kubernetes at OLDEST_KUBERNETES_VERSION take the release, with Helm finding the version on its own as
users' Helm does: the dry run and the install are accepted, the API server keeps every field sent (a field it did
not know would be dropped with only a warning under Helm 3's client-side apply), and the Jobs and DaemonSets
do their work on the fake GPU nodes.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlcharts.cluster import ClusterHandle
from dlcharts.helm import find_helm
from dlcharts.host.binaries import OLDEST_KUBERNETES_VERSION
from dlcharts.install.dryrun import dry_run_create
from dlcharts.install.kube import Kube
from dlcharts.install.namespaces import create_namespace, delete_namespace
from dlcharts.install.podsecurity import pod_security_for
from dlcharts.install.releases import ChartSource, Release, dry_run_server, install, release_manifest, uninstall
from dlcharts.install.waits import namespace_inventory, wait_ready, wait_uninstalled
from dlcharts.jobs.run import is_start_watch
from dlcharts.suite import Scenario, all_scenarios
from dlcharts.toolchain import HELM_MATRIX
from tests.support import CHARTS
from tests.support import cluster as cluster_env
from tests.support.cluster import POD_SECURITY

pytestmark = pytest.mark.cluster

DEFAULTS = [s for s in all_scenarios(CHARTS) if s.name in ("default", "01-default")]


@pytest.fixture(scope="module")
def old_kube(oldest_cluster: ClusterHandle) -> Iterator[Kube]:
    """The oldest minor's cluster with the CRDs and the classes the scenarios name (as the chart tier's)."""
    with Kube.from_kubeconfig(oldest_cluster.kubeconfig) as kube, contextlib.ExitStack() as stack:
        cluster_env.ensure_crds(kube, cluster_env.all_crds())
        stack.enter_context(cluster_env.scenario_classes(kube))
        yield kube


def test_the_cluster_runs_the_oldest_minor(old_kube: Kube) -> None:
    assert old_kube.get("/version")["gitVersion"] == OLDEST_KUBERNETES_VERSION
    assert {s.chart_name for s in DEFAULTS} == {c.name for c in CHARTS.iterdir() if (c / "ci").is_dir()}


def missing_fields(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Paths set in ``sent`` that ``stored`` lacks: a field the API server did not know. Zero values (false, 0,
    "", empty) may be left out as the API server serializes them, and values may be normalized (quantities)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [path or "."]
        return [
            p for key, value in sent.items()
            for p in ([f"{path}.{key}"] if key not in stored and value not in (False, 0, "", [], {}, None)
                      else missing_fields(value, stored[key], f"{path}.{key}") if key in stored else [])
        ]  # fmt: skip
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        pairs = enumerate(zip(sent, stored, strict=True))
        return [p for i, (a, b) in pairs for p in missing_fields(a, b, f"{path}[{i}]")]
    return []


def live(kube: Kube, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    res = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
    return dict(kube.get(res.path(namespace, obj["metadata"]["name"])))


@pytest.mark.parametrize("helm_key", HELM_MATRIX)
@pytest.mark.parametrize("scenario", DEFAULTS, ids=str)
def test_the_default_scenario_installs_and_runs(scenario: Scenario, helm_key: str, old_kube: Kube,
                                                oldest_cluster: ClusterHandle) -> None:  # fmt: skip
    helm = find_helm(helm_key)
    name = f"{scenario.chart_name}-h{helm.major}"
    namespace = f"{name}-{uuid.uuid4().hex[:4]}"
    release = Release(helm, Path(oldest_cluster.kubeconfig), name, namespace)
    source = ChartSource(scenario.chart, (scenario.values_file,) if scenario.values_file else ())
    create_namespace(old_kube, namespace, pod_security_for(scenario.chart_name, POD_SECURITY).level)
    try:
        before = namespace_inventory(old_kube, namespace)
        dry_run_server(old_kube, release, source)
        install(old_kube, release, source)
        manifest = release_manifest(release)
        assert manifest, "the release has no objects"
        dropped = {
            f"{obj['kind']}/{obj['metadata']['name']}": missing
            for obj in manifest
            if (missing := missing_fields(obj, live(old_kube, obj, namespace)))
        }
        assert not dropped, f"fields the {OLDEST_KUBERNETES_VERSION} API server did not keep: {dropped}"
        ready = wait_ready(old_kube, namespace, name)
        assert ready.pods and all(p.node for p in ready.pods.values()), ready.pods
        uninstall(old_kube, release)
        wait_uninstalled(old_kube, namespace, name, before)
    finally:
        delete_namespace(old_kube, namespace)


def test_the_version_gates_matter_there(old_kube: Kube, oldest_cluster: ClusterHandle, render: Any) -> None:
    """What tensorflow-dist renders for the pinned version (a Job successPolicy) is refused by the oldest API server,
    and what it renders for that server is created: the gate, not luck, makes the install above pass."""
    namespace = f"gates-{uuid.uuid4().hex[:4]}"
    create_namespace(old_kube, namespace, "privileged")
    try:
        verdicts = {}
        for version in ("1.35.0", OLDEST_KUBERNETES_VERSION.lstrip("v")):
            objects = render(CHARTS / "tensorflow-dist", kube_version=version)
            (job,) = [o.body for o in objects if o.kind == "Job" and not is_start_watch(o.body)]  # the worker Job
            status, doc = dry_run_create(old_kube, job, namespace, strict=True)
            verdicts[version] = (status, "successPolicy" in job["spec"], str(doc.get("message", "")))
        assert verdicts["1.35.0"][:2] == (400, True) and 'unknown field "spec.successPolicy"' in verdicts["1.35.0"][2]
        assert verdicts[OLDEST_KUBERNETES_VERSION.lstrip("v")][:2] == (201, False), verdicts
    finally:
        delete_namespace(old_kube, namespace)


def test_a_field_the_server_does_not_keep_is_seen() -> None:
    sent = {"spec": {"successPolicy": {"rules": [{"succeededIndexes": "0"}]}, "parallelism": 2, "suspend": False},
            "metadata": {"labels": {"a": "b"}}}  # fmt: skip
    stored = {"spec": {"parallelism": 2}, "metadata": {"labels": {"a": "b"}}}
    assert missing_fields(sent, stored) == [".spec.successPolicy"]
    assert missing_fields(sent, sent) == []
