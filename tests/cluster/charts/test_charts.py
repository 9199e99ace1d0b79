"""Every chart x ci/ scenario, installed for real on the session's cluster with Helm 4, and with Helm 3 the
scenarios that render a kind of object the chart's earlier scenarios do not (HELM3_SCENARIOS): Helm 3's install,
upgrade and uninstall differ from Helm 4's per kind (three-way merge patches against server-side apply), and its
rendering of every scenario is the Helm 3 render tier's job.

Real: the API server (admission, Pod Security, strict field validation of CRDs, immutability), the scheduler
(GPU capacity, affinity, topology spread, priority classes), the controller-manager (Jobs, DaemonSets,
EndpointSlices, garbage collection), Helm itself. Simulated by kwok: the containers (a Job's pod succeeds
2 s after it starts; DaemonSet pods keep running), and so whatever the programs and the helm test pods would
check inside (DNS, NCCL, ...). What the cluster gets beyond its defaults for these scenarios (CRDs, a
stand-in scheduler for the gang schedulers' names, extra GPU node models, a PVC) is listed in tests/support/cluster.py.

For each case, in a fresh namespace that enforces the chart's Pod Security level (its Chart.yaml annotations;
restricted unless a chart says why not):

1. ``helm install --dry-run=server``, plus the API server's Pod Security verdict on every workload;
2. install the previous chart version (dlcharts.install.releases.previous_chart: the chart at the release checks'
   base when its version differs, else this chart) with the scenario's values, then ``helm upgrade`` to
   this chart with the same values (with the same version: a re-apply of the release over what the
   controllers have written since);
3. wait: every Job Complete / SuccessCriteriaMet, every DaemonSet on exactly its nodes, every pod bound,
   failing fast on unschedulable pods, image-pull errors, crash loops, refused pods; ``helm test`` runs
   alongside (the peer check is meant to run while the job runs);
4. ``helm upgrade`` with changed values (cluster_env.changed_values) and wait again; the change is checked
   on the live objects;
5. ``helm uninstall``: nothing of the release stays (every namespaced type from API discovery, cluster-scoped
   objects with the release's instance label, Helm's own records).

Scaling a Job release (worker+1) is not an in-place upgrade: a Job's pod template is immutable, as the
charts' NOTES say. test_scaling_needs_a_reinstall proves the refusal and the documented path.
"""

from __future__ import annotations

import concurrent.futures
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts.errors import ClusterError
from dlcharts.helm import find_helm
from dlcharts.install.kube import Kube
from dlcharts.install.namespaces import create_namespace, delete_namespace
from dlcharts.install.podsecurity import pod_security_for, pod_security_problems, stricter_level
from dlcharts.install.releases import (
    ChartSource,
    Release,
    dry_run_server,
    helm_test,
    install,
    previous_chart,
    release_status,
    try_upgrade,
    uninstall,
    upgrade,
)
from dlcharts.install.waits import namespace_inventory, wait_ready, wait_uninstalled
from dlcharts.jobs.run import is_start_watch
from dlcharts.suite import Scenario, all_scenarios
from dlcharts.toolchain import HELM_MATRIX, TOOLS
from tests.support import CHARTS, ROOT
from tests.support import cluster as cluster_env
from tests.support.charts import TRAINING
from tests.support.cluster import POD_SECURITY

pytestmark = pytest.mark.cluster

SCENARIOS = all_scenarios(CHARTS)
SNAPSHOTS = ROOT / "tests" / "snapshots"


def scenarios_with_new_kinds() -> set[str]:
    """Ids of the scenarios that render a kind the chart's earlier scenarios do not (read from their golden
    snapshots, which the render tier keeps equal to the charts; a scenario without one counts as new)."""
    chosen, kinds_seen = set(), {}
    for scenario in SCENARIOS:
        snapshot = SNAPSHOTS / scenario.chart_name / f"{scenario.name}.yaml"
        kinds = {d["kind"] for d in yaml.safe_load_all(snapshot.read_text()) if d} if snapshot.is_file() else {None}
        seen = kinds_seen.setdefault(scenario.chart_name, set())
        if not kinds <= seen:
            chosen.add(scenario.id)
        seen |= kinds
    return chosen


HELM3_SCENARIOS = scenarios_with_new_kinds()
CASES = [
    pytest.param(scenario, key, id=f"{scenario}-{key}")
    for scenario in SCENARIOS
    for key in HELM_MATRIX
    if TOOLS[key].major != 3 or scenario.id in HELM3_SCENARIOS
]
TRAINING_CHARTS = sorted(TRAINING)


@pytest.fixture(scope="module")
def scenario_nodes(kube: Kube, chart_cluster: Any) -> Iterator[list[str]]:
    """The A100 / V100 / vGPU nodes some scenarios select, for this module only."""
    with cluster_env.extra_nodes(kube) as names:
        yield names


def release_name(scenario: Scenario, major: int) -> str:
    return f"{scenario.chart_name}-{scenario.name[:2]}-h{major}"


def source_for(chart: Path, scenario: Scenario) -> ChartSource:
    return ChartSource(chart, (scenario.values_file,) if scenario.values_file else ())


@pytest.mark.parametrize(("scenario", "helm_key"), CASES)
def test_install_upgrade_uninstall(
    scenario: Scenario, helm_key: str, kube: Kube, chart_cluster: Any, scenario_nodes: list[str], tmp_path: Path
) -> None:
    helm = find_helm(helm_key)
    name = release_name(scenario, helm.major)
    namespace = f"{name}-{uuid.uuid4().hex[:4]}"
    level = pod_security_for(scenario.chart_name, POD_SECURITY).level
    release = Release(helm, Path(chart_cluster.kubeconfig), name, namespace)
    needs = cluster_env.needs(scenario.id)
    allow_no_nodes = {name + suffix for suffix in needs.get("allow_no_nodes", {})}
    current = source_for(scenario.chart, scenario)
    create_namespace(kube, namespace, level)
    volumes = []
    try:
        for claim in needs.get("claims", []):
            volumes.append(cluster_env.bound_claim(kube, namespace, claim))
        before = namespace_inventory(kube, namespace)

        # 1. the API server's verdict without storing anything
        dry_run_server(kube, release, current)

        # 2. install the previous version, upgrade to this one with the same values
        previous = previous_chart(helm, scenario.chart, tmp_path)
        install(kube, release, source_for(previous.chart, scenario))
        if previous.chart != scenario.chart:
            wait_ready(kube, namespace, name, allow_no_nodes=allow_no_nodes)
            proc = try_upgrade(release, current)
            if proc.returncode != 0:
                # A Job's template is immutable: the charts refuse such an upgrade before applying anything.
                assert "is still there" in proc.stderr and "helm uninstall" in proc.stderr, proc.stderr
                uninstall(kube, release)
                wait_uninstalled(kube, namespace, name, before)
                install(kube, release, current)
        else:
            upgrade(kube, release, current)

        # 3. waits, with helm test alongside
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            tested = pool.submit(helm_test, kube, release)
            ready = wait_ready(kube, namespace, name, allow_no_nodes=allow_no_nodes)
            tested.result()
        assert all(p.node for p in ready.pods.values()), ready.pods

        # 4. upgrade with changed values
        items, check = cluster_env.changed_values(scenario.chart_name)
        manifest = upgrade(kube, release, current.with_values(*items))
        wait_ready(kube, namespace, name, allow_no_nodes=allow_no_nodes)
        check_change(kube, namespace, manifest, check)

        # 5. uninstall: nothing stays
        uninstall(kube, release)
        wait_uninstalled(kube, namespace, name, before)
    finally:
        delete_namespace(kube, namespace)
        for pv in volumes:
            cluster_env.delete_volume(kube, pv)


def check_change(kube: Kube, ns: str, manifest: list[dict[str, Any]], check: str) -> None:
    """The changed value is on the live objects, as the release's new manifest says."""
    if check == "job-deadline":
        jobs = [o for o in manifest if o["kind"] == "Job"]
        assert jobs, "a training chart without Jobs"
        for job in jobs:
            live = kube.get(f"/apis/batch/v1/namespaces/{ns}/jobs/{job['metadata']['name']}")
            assert live["spec"].get("activeDeadlineSeconds") == job["spec"].get("activeDeadlineSeconds"), job[
                "metadata"
            ]
        assert any(j["spec"].get("activeDeadlineSeconds") == 86399 for j in jobs), "the changed value rendered nowhere"
    elif check == "daemonset-annotation":
        daemonsets = [o for o in manifest if o["kind"] == "DaemonSet"]
        assert daemonsets
        for ds in daemonsets:
            live = kube.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/{ds['metadata']['name']}")
            annotations = live["spec"]["template"]["metadata"].get("annotations") or {}
            assert annotations.get("dlcharts.io/upgraded") == "yes", (ds["metadata"]["name"], annotations)
    else:  # pragma: no cover - a typo in cluster_env
        raise AssertionError(f"unknown check {check}")


@pytest.mark.parametrize("helm_key", HELM_MATRIX)
@pytest.mark.parametrize("chart", TRAINING_CHARTS)
def test_scaling_is_refused_before_anything_changes(chart: str, helm_key: str, kube: Kube, chart_cluster: Any) -> None:
    """``helm upgrade --set worker=N+1`` over a live release: Kubernetes never lets a Job's pod template change,
    and Helm applies objects in order without undoing the earlier ones, so a refusal from the API server would
    leave the release half-changed (hostfile, worker Job) and marked failed. The charts' guard
    (dl-common.job.refuseImmutableChange: a lookup of the live Jobs while rendering) must stop the upgrade
    before anything is applied, say how to proceed, and leave no new revision. A change Kubernetes allows on
    a Job (activeDeadlineSeconds) still upgrades in place."""
    helm = find_helm(helm_key)
    scenario = next(s for s in SCENARIOS if s.chart_name == chart)
    workers = int((yaml.safe_load(scenario.values_file.read_text()) if scenario.values_file else {}).get("worker", 2))
    name = f"{chart}-scale-h{helm.major}"
    namespace = f"{name}-{uuid.uuid4().hex[:4]}"
    release = Release(helm, Path(chart_cluster.kubeconfig), name, namespace)
    create_namespace(kube, namespace, pod_security_for(chart, POD_SECURITY).level)
    try:
        before = namespace_inventory(kube, namespace)
        source = source_for(scenario.chart, scenario)
        install(kube, release, source)
        wait_ready(kube, namespace, name)
        written = release_objects_state(kube, namespace)

        proc = try_upgrade(release, source.with_values(f"worker={workers + 1}"))

        assert proc.returncode != 0, "scaling a Job release in place was accepted"
        assert f"of release {name} is still there" in proc.stderr, proc.stderr
        assert f"helm uninstall {name} -n {namespace}" in proc.stderr, proc.stderr
        assert release_objects_state(kube, namespace) == written
        status = release_status(release)
        assert (status["version"], status["info"]["status"]) == (1, "deployed"), status["info"]

        upgrade(kube, release, source.with_values("defaults.job.activeDeadlineSeconds=7200"))
        jobs = kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs")
        # the training Jobs take the new deadline; the start watch's Job has none of its own (it ends once every
        # pod started, or when it failed the release) and is left as it was
        training = [j for j in jobs if not is_start_watch(j)]
        assert training and {j["spec"].get("activeDeadlineSeconds") for j in training} == {7200}
        assert [j["spec"].get("activeDeadlineSeconds") for j in jobs if is_start_watch(j)] == [None]
        uninstall(kube, release)
        wait_uninstalled(kube, namespace, name, before)
    finally:
        delete_namespace(kube, namespace)


def release_objects_state(kube: Kube, namespace: str) -> dict[str, str]:
    """Kind/name -> what changes when Helm writes the object: a Job's generation (its status changes all the
    time), the resourceVersion of every ConfigMap, Secret (Helm's release records included) and Service."""
    state = {}
    for kind, path in (("jobs", "/apis/batch/v1"), ("configmaps", "/api/v1"), ("secrets", "/api/v1"),
                       ("services", "/api/v1")):  # fmt: skip
        for obj in kube.items(f"{path}/namespaces/{namespace}/{kind}"):
            meta = obj["metadata"]
            state[f"{kind}/{meta['name']}"] = str(meta["generation"] if kind == "jobs" else meta["resourceVersion"])
    return state


def test_each_charts_pod_security_level_is_needed(kube: Kube, chart_cluster: Any) -> None:
    """Each level below restricted that a chart's annotations name is needed: at the next stricter level the API
    server would refuse pods of at least one of the chart's scenarios."""
    assert POD_SECURITY, "no chart names a level below restricted: cntk-dist and gpu-device-plugin need one"
    helm = find_helm(HELM_MATRIX[0])
    for chart, security in POD_SECURITY.items():
        stricter = stricter_level(security.level)
        assert stricter, f"{chart}: restricted needs no entry"
        namespace = f"psa-{chart}-{uuid.uuid4().hex[:4]}"[:63]
        create_namespace(kube, namespace, stricter)
        try:
            refused = []
            for scenario in (s for s in SCENARIOS if s.chart_name == chart):
                release = Release(helm, Path(chart_cluster.kubeconfig), f"psa-{scenario.name[:2]}", namespace)
                try:
                    dry_run_server(kube, release, source_for(scenario.chart, scenario))
                except ClusterError as exc:
                    if "PodSecurity" not in str(exc):
                        raise
                    refused.append(scenario.name)
            assert refused, f"{chart}: every scenario would pass at {stricter}; make its Chart.yaml annotation stricter"
        finally:
            delete_namespace(kube, namespace)


def test_pod_security_problems_reads_the_api_servers_verdict(kube: Kube, chart_cluster: Any) -> None:
    """A root pod in a restricted namespace: the dry-run names the violation (so the harness can fail before
    Helm installs anything Helm would not warn about)."""
    namespace = f"psa-check-{uuid.uuid4().hex[:4]}"
    create_namespace(kube, namespace, "restricted")
    try:
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "root"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox:1.37.0", "securityContext": {"runAsUser": 0}}],
                    }
                }
            },
        }
        problems = pod_security_problems(kube, namespace, [job])
        assert problems and "runAsNonRoot" in problems[0] or "runAsUser=0" in problems[0], problems
        assert not kube.items(f"/apis/batch/v1/namespaces/{namespace}/jobs"), "a dry run stored the Job"
    finally:
        delete_namespace(kube, namespace)
