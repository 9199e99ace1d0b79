"""The embedded cluster behaves like a real one: API server, real scheduler and controller-manager,
fake GPU nodes whose pods run and finish, and Pod Security admission."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dlcharts.cluster import KUBERNETES_VERSION, ClusterConfig, ClusterHandle, EmbeddedCluster, embedded, poll
from dlcharts.cluster.steps import StepContext, fake_nodes
from dlcharts.errors import ClusterError
from dlcharts.host import procs
from tests.support.real_node import listening_addresses

pytestmark = pytest.mark.cluster

GPU = "nvidia.com/gpu"


def restricted_container(name: str = "main", gpus: int = 0) -> dict[str, Any]:
    """A container that passes Pod Security `restricted`."""
    resources: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}
    if gpus:
        resources["limits"][GPU] = str(gpus)
    return {
        "name": name,
        "image": "busybox:1.36.1",
        "command": ["true"],
        "resources": resources,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


def pod_spec(gpus: int = 0, restart: str = "Never") -> dict[str, Any]:
    return {"restartPolicy": restart, "containers": [restricted_container(gpus=gpus)]}


def job_condition(batch: Any, ns: str, name: str) -> str | None:
    job = batch.read_namespaced_job_status(name, ns)
    for cond in job.status.conditions or []:
        if cond.type in ("Complete", "Failed") and cond.status == "True":
            return str(cond.type)
    return None


def test_api_server_answers_with_the_pinned_version(embedded_cluster: ClusterHandle, api: Any) -> None:
    assert embedded_cluster.server.startswith("https://127.0.0.1:")
    version: Any = client.VersionApi(api).get_code()
    assert version.git_version == KUBERNETES_VERSION
    assert embedded_cluster.kubeconfig.is_file()


def test_nodes_are_ready_with_gpus(api: Any) -> None:
    core: Any = client.CoreV1Api(api)
    nodes = {n.metadata.name: n for n in core.list_node().items}
    gpu_nodes = [n for n in nodes.values() if n.metadata.labels.get("nvidia.com/gpu.present") == "true"]
    fake = [n for n in nodes.values() if n.metadata.labels.get("type") == "kwok"]
    cpu_nodes = [n for n in fake if GPU not in (n.status.allocatable or {})]
    assert len(gpu_nodes) == 4
    assert len(cpu_nodes) == 2
    for node in nodes.values():
        ready = [c.status for c in node.status.conditions if c.type == "Ready"]
        assert ready == ["True"], f"{node.metadata.name} not Ready: {node.status.conditions}"
    for node in gpu_nodes:
        assert node.status.allocatable[GPU] == "8"
        assert node.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"


def test_a_new_namespace_comes_back_with_what_the_controllers_add(api: Any, namespace: str) -> None:
    """Waiting for these keeps a namespace inventory taken right after creation from counting them later as
    objects a release left behind (a CI run once failed that way on ConfigMap/kube-root-ca.crt)."""
    core: Any = client.CoreV1Api(api)
    assert [sa.metadata.name for sa in core.list_namespaced_service_account(namespace).items] == ["default"]
    assert [cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items] == ["kube-root-ca.crt"]


def test_job_with_two_completions_completes(api: Any, namespace: str) -> None:
    batch: Any = client.BatchV1Api(api)
    core: Any = client.CoreV1Api(api)
    job = {
        "metadata": {"name": "two"},
        "spec": {
            "completions": 2,
            "parallelism": 2,
            "backoffLimit": 0,
            "template": {"spec": pod_spec(gpus=1)},
        },
    }
    batch.create_namespaced_job(namespace, job)
    assert poll(lambda: job_condition(batch, namespace, "two"), 60, "job two to finish") == "Complete"
    status = batch.read_namespaced_job_status("two", namespace).status
    assert status.succeeded == 2
    pods = core.list_namespaced_pod(namespace, label_selector="job-name=two").items
    assert len(pods) == 2
    for pod in pods:
        assert pod.status.phase == "Succeeded"
        assert pod.spec.node_name.startswith("gpu-"), "the scheduler must bind GPU pods to GPU nodes"
        assert [c.state.terminated.exit_code for c in pod.status.container_statuses] == [0]
    # Garbage collection (kube-controller-manager) removes the pods with the Job.
    batch.delete_namespaced_job("two", namespace, propagation_policy="Background")
    poll(
        lambda: not core.list_namespaced_pod(namespace, label_selector="job-name=two").items,
        60,
        "the garbage collector to delete job two's pods",
    )


def test_too_many_gpus_stays_pending_with_the_schedulers_reason(api: Any, namespace: str) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, {"metadata": {"name": "greedy"}, "spec": pod_spec(gpus=9)})

    def failed_scheduling() -> str | None:
        for event in core.list_namespaced_event(namespace, field_selector="involvedObject.name=greedy").items:
            if event.reason == "FailedScheduling":
                return str(event.message)
        return None

    message = poll(failed_scheduling, 60, "a FailedScheduling event for pod greedy")
    assert f"Insufficient {GPU}" in message
    pod = core.read_namespaced_pod("greedy", namespace)
    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None


def test_privileged_pod_is_rejected_by_pod_security_restricted(api: Any, namespace: str) -> None:
    core: Any = client.CoreV1Api(api)
    container = restricted_container()
    container["securityContext"] = {"privileged": True}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(
            namespace, {"metadata": {"name": "priv"}, "spec": {"restartPolicy": "Never", "containers": [container]}}
        )
    body = str(err.value.body)
    assert err.value.status == 403
    assert "violates PodSecurity" in body
    assert "restricted" in body
    # the compliant twin is admitted
    core.create_namespaced_pod(namespace, {"metadata": {"name": "fine"}, "spec": pod_spec()})


def test_daemonset_lands_on_gpu_nodes_and_keeps_running(
    embedded_cluster: ClusterHandle, api: Any, namespace: str
) -> None:
    apps: Any = client.AppsV1Api(api)
    core: Any = client.CoreV1Api(api)
    labels = {"app": "agent"}
    apps.create_namespaced_daemon_set(
        namespace,
        {
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.present": "true"},
                        "containers": [restricted_container()],
                    },
                },
            },
        },
    )

    def all_running() -> list[Any] | None:
        pods: list[Any] = core.list_namespaced_pod(namespace, label_selector="app=agent").items
        if len(pods) == 4 and all(p.status.phase == "Running" for p in pods):
            return pods
        return None

    pods = poll(all_running, 60, "4 DaemonSet pods Running")
    assert sorted(p.spec.node_name for p in pods) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    # Longer than a Job pod runs: DaemonSet pods must not be completed by the Job stage.
    time.sleep(ClusterConfig().pod_run_seconds * 2 + 1)
    phases = {p.status.phase for p in core.list_namespaced_pod(namespace, label_selector="app=agent").items}
    assert phases == {"Running"}


def test_service_gets_endpoint_slices_from_the_controller_manager(api: Any, namespace: str) -> None:
    apps: Any = client.AppsV1Api(api)
    core: Any = client.CoreV1Api(api)
    discovery: Any = client.DiscoveryV1Api(api)
    labels = {"app": "web"}
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec(restart="Always")},
            },
        },
    )
    core.create_namespaced_service(
        namespace, {"metadata": {"name": "web"}, "spec": {"selector": labels, "ports": [{"port": 80}]}}
    )

    def ready_endpoints() -> int | None:
        slices = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector="kubernetes.io/service-name=web"
        ).items
        ready = [e for s in slices for e in (s.endpoints or []) if e.conditions.ready]
        return len(ready) if len(ready) == 2 else None

    assert poll(ready_endpoints, 60, "2 ready endpoints for service web") == 2


def test_simulated_failure_fails_the_job(api: Any, namespace: str) -> None:
    batch: Any = client.BatchV1Api(api)
    template = {"metadata": {"annotations": {"dlcharts.io/simulate": "fail"}}, "spec": pod_spec()}
    batch.create_namespaced_job(
        namespace, {"metadata": {"name": "doomed"}, "spec": {"backoffLimit": 0, "template": template}}
    )
    assert poll(lambda: job_condition(batch, namespace, "doomed"), 60, "job doomed to finish") == "Failed"


def test_simulated_image_pull_error(api: Any, namespace: str) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "nopull", "annotations": {"dlcharts.io/simulate": "image-pull-error"}},
            "spec": pod_spec(),
        },
    )

    def waiting_reason() -> str | None:
        statuses = core.read_namespaced_pod("nopull", namespace).status.container_statuses or []
        reasons = [s.state.waiting.reason for s in statuses if s.state and s.state.waiting]
        return reasons[0] if reasons else None

    assert poll(waiting_reason, 60, "pod nopull to report ImagePullBackOff") == "ImagePullBackOff"
    assert core.read_namespaced_pod("nopull", namespace).status.phase == "Pending"


def test_second_start_reuses_the_running_cluster(embedded_cluster: ClusterHandle) -> None:
    again = EmbeddedCluster(ClusterConfig(name=embedded_cluster.name)).start()
    assert again.reused
    assert again.kubeconfig == embedded_cluster.kubeconfig
    assert again.server == embedded_cluster.server


def test_control_plane_listens_on_loopback_only(embedded_cluster: ClusterHandle) -> None:
    pids = embedded_cluster.pids()
    assert set(pids) >= {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller"}
    listening = listening_addresses(set(pids.values()))
    assert listening, "found no listening sockets of the control plane"
    public = sorted(a for a in listening if not a.startswith(("127.", "[::1]", "::1")))
    assert not public, f"control-plane processes listen beyond loopback: {public}"


def test_failed_start_leaves_no_processes_but_keeps_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = EmbeddedCluster(ClusterConfig(name="dlcharts-failing"))
    seen: dict[str, int] = {}

    def broken_nodes(ctx: StepContext) -> None:
        seen.update(embedded.component_pids(cluster.state_dir))
        raise ClusterError("simulated node failure")

    monkeypatch.setattr(fake_nodes, "start", broken_nodes)
    with pytest.raises(ClusterError, match="simulated node failure") as err:
        cluster.start()
    assert "component logs kept in" in str(err.value)
    kept = cluster.run_dir / "dlcharts-failing-failed-logs"
    assert (kept / "kube-apiserver.log").is_file()
    assert not cluster.state_dir.exists()
    assert not cluster.is_running()
    assert len(seen) == 5
    assert [name for name, pid in seen.items() if procs.alive(pid)] == []


def test_simulated_crash_loop(api: Any, namespace: str) -> None:
    core: Any = client.CoreV1Api(api)
    core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "crashy", "annotations": {"dlcharts.io/simulate": "crash-loop"}},
            "spec": pod_spec(restart="Always"),
        },
    )

    def crash_looping() -> Any:
        statuses = core.read_namespaced_pod("crashy", namespace).status.container_statuses or []
        waiting = [s for s in statuses if s.state and s.state.waiting and s.state.waiting.reason == "CrashLoopBackOff"]
        return waiting[0] if waiting else None

    status = poll(crash_looping, 60, "pod crashy to report CrashLoopBackOff")
    assert status.restart_count > 0
    assert status.last_state.terminated.exit_code == 1
