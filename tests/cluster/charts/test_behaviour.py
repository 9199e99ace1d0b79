"""What the charts promise about scheduling and lifetimes, proven on the session's (embedded) cluster.

Real in every test here: kube-apiserver (admission, Pod Security), kube-scheduler (GPU capacity as extended
resources, node affinity), kube-controller-manager (Job controller with backoffLimitPerIndex, DaemonSet
controller, EndpointSlice controller, garbage collector), Helm. Simulated: the nodes and containers (kwok).
A fake node's GPUs are capacity numbers the scheduler counts exactly like real ones; a container "runs" for
the time its pod's ``dlcharts.io/run-duration`` annotation says (2 s by default) and then exits 0, unless
``dlcharts.io/simulate`` asks for a failure. Each test's docstring says what it adds to that.

The tests expect the embedded cluster's default node pools (gpu-0..3 with 8 nvidia.com/gpu each, cpu-0..1).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlcharts.errors import ClusterError
from dlcharts.helm import find_helm
from dlcharts.install.kube import Kube
from dlcharts.install.namespaces import create_namespace, delete_namespace
from dlcharts.install.podsecurity import pod_security_for
from dlcharts.install.releases import ChartSource, Release, dry_run_server, install, uninstall
from dlcharts.install.state import job_outcome, pod_gpus
from dlcharts.install.waits import wait_ready
from dlcharts.waiting import poll
from tests.support import CHARTS, ROOT
from tests.support.cluster import POD_SECURITY

pytestmark = pytest.mark.cluster

GPU = "nvidia.com/gpu"
RUN = "dlcharts\\.io/run-duration"  # for --set
SIMULATE = "dlcharts\\.io/simulate"


@pytest.fixture(scope="module")
def gpu_nodes(kube: Kube, cluster: Any) -> dict[str, int]:
    """The GPU nodes (label nvidia.com/gpu.present=true) and their allocatable nvidia.com/gpu."""
    nodes = kube.items("/api/v1/nodes", label_selector="nvidia.com/gpu.present=true")
    found = {n["metadata"]["name"]: int(n["status"]["allocatable"].get(GPU, "0")) for n in nodes}
    assert found == {f"gpu-{i}": 8 for i in range(4)}, (
        f"these tests need the embedded cluster's default nodes (gpu-0..3 x 8 {GPU}); found {found}"
    )
    return found


@contextlib.contextmanager
def released(
    kube: Kube,
    cluster: Any,
    chart: str,
    *set_values: str,
    set_json: tuple[str, ...] = (),
    level: str | None = None,
    values_file: str | None = None,
) -> Iterator[tuple[Release, ChartSource]]:
    """A fresh namespace and a release name; the chart is NOT installed yet (tests decide how). Uninstalled
    (if installed) and the namespace deleted afterwards."""
    helm = find_helm("helm-v4.3.1")
    name = f"b-{chart.split('-')[0][:6]}-{uuid.uuid4().hex[:4]}"
    namespace = name
    create_namespace(kube, namespace, level or pod_security_for(chart, POD_SECURITY).level)
    release = Release(helm, Path(cluster.kubeconfig), name, namespace)
    files = (CHARTS / chart / "ci" / values_file,) if values_file else ()
    source = ChartSource(CHARTS / chart, files, tuple(set_values), set_json)
    try:
        yield release, source
    finally:
        with contextlib.suppress(ClusterError):
            uninstall(kube, release, timeout=60)
        delete_namespace(kube, namespace)


def pods_of(kube: Kube, release: Release, selector: str = "") -> list[dict[str, Any]]:
    sel = f"app.kubernetes.io/instance={release.name}" + (f",{selector}" if selector else "")
    return kube.items(f"/api/v1/namespaces/{release.namespace}/pods", sel)


def running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def mark_exited(kube: Kube, pod: dict[str, Any], exit_code: int = 0) -> None:
    """Report a pod's containers as exited with ``exit_code`` (phase Succeeded for 0, else Failed), as the
    kubelet does when the program ends: here, for a program the watchdog stopped (kwok runs no processes)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = pod["status"].get("startTime", now)
    reason = "PodCompleted" if exit_code == 0 else "PodFailed"
    conditions = []
    for cond in pod["status"].get("conditions") or []:
        if cond["type"] in ("Ready", "ContainersReady"):
            cond = {**cond, "status": "False", "reason": reason, "lastTransitionTime": now}
        conditions.append(cond)
    terminated = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": started,
        "finishedAt": now,
    }
    statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": f"fake://{c['image']}",
            "ready": False,
            "started": False,
            "restartCount": 0,
            "state": {"terminated": terminated},
        }
        for c in pod["spec"]["containers"]
    ]
    phase = "Succeeded" if exit_code == 0 else "Failed"
    resp = kube.request(
        "PATCH",
        f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods/{pod['metadata']['name']}/status",
        body={"status": {"phase": phase, "conditions": conditions, "containerStatuses": statuses}},
        content_type="application/merge-patch+json",
    )
    assert resp.status == 200, resp.doc


# ----- GPUs and placement ---------------------------------------------------------------------------------


def test_four_workers_bind_to_four_gpu_nodes(kube: Kube, cluster: Any, gpu_nodes: dict[str, int]) -> None:
    """tensorflow-dist --set worker=4 --set defaults.gpu.count=8 on 4 x 8-GPU nodes: the real scheduler puts
    each worker on its own GPU node (8 of 8 GPUs free there), all four running at once; the Job completes.
    Workers run 6 s (annotation) so that all four are seen running together."""
    with released(
        kube, cluster, "tensorflow-dist", "worker=4", "defaults.gpu.count=8", f"defaults.podAnnotations.{RUN}=6s"
    ) as (release, source):
        install(kube, release, source)
        workers = poll(
            lambda: (lambda ps: ps if len(ps) == 4 else None)(running(pods_of(kube, release))), 60, "4 running workers"
        )
        nodes = [p["spec"]["nodeName"] for p in workers]
        assert len(set(nodes)) == 4, f"workers share nodes: {nodes}"
        assert set(nodes) == set(gpu_nodes)
        for pod in workers:
            assert pod_gpus(pod) == {GPU: 8}
            assert gpu_nodes[pod["spec"]["nodeName"]] >= 8
        ready = wait_ready(kube, release.namespace, release.name)
        assert ready.jobs == {f"{release.name}-worker": "SuccessCriteriaMet"} or all(
            v in ("Complete", "SuccessCriteriaMet") for v in ready.jobs.values()
        )
        # tensorflow-dist's success policy ends the Job when worker 0 succeeds, and the Job controller then deletes
        # the workers' pods still running: fewer than four may be left to read (all four were seen running above)
        placed = ready.nodes_of(f"Job/{release.name}-worker")
        assert placed and set(placed) <= set(gpu_nodes), placed


def test_more_gpus_than_a_node_has_is_reported_unschedulable(
    kube: Kube, cluster: Any, gpu_nodes: dict[str, int]
) -> None:
    """defaults.gpu.count=9 fits no 8-GPU node: install succeeds (the API server cannot know), and the wait
    fails at once with the scheduler's own FailedScheduling message, not after its timeout."""
    with released(kube, cluster, "tensorflow-dist", "worker=2", "defaults.gpu.count=9") as (release, source):
        install(kube, release, source)
        started = time.monotonic()
        with pytest.raises(ClusterError) as failure:
            wait_ready(kube, release.namespace, release.name, timeout=300)
        message = str(failure.value)
        assert "is unschedulable" in message and f"Insufficient {GPU}" in message, message
        assert "timed out" not in message and "not ready after" not in message
        assert time.monotonic() - started < 300


# ----- the device plugin's DaemonSet ---------------------------------------------------------------------------


def test_device_plugin_lands_only_on_gpu_nodes(kube: Kube, cluster: Any, gpu_nodes: dict[str, int]) -> None:
    """The gpu-device-plugin DaemonSet (default affinity: nvidia.com/gpu.present=true, or NFD's PCI/CPU
    vendor labels) runs one ready pod on each of gpu-0..3 and none on cpu-0/cpu-1; the DaemonSet controller's
    desiredNumberScheduled is 4."""
    with released(kube, cluster, "gpu-device-plugin") as (release, source):
        install(kube, release, source)
        ds = f"{release.name}-device-plugin"
        ready = wait_ready(kube, release.namespace, release.name, expect_nodes={ds: set(gpu_nodes)})
        assert ready.daemonsets[ds] == set(gpu_nodes)
        live = kube.get(f"/apis/apps/v1/namespaces/{release.namespace}/daemonsets/{ds}")
        assert live["status"]["desiredNumberScheduled"] == 4
        on = {p["spec"]["nodeName"] for p in running(pods_of(kube, release))}
        assert not {n for n in on if n.startswith("cpu-")}, on


def test_device_plugin_matching_no_node_is_a_failure(kube: Kube, cluster: Any, gpu_nodes: dict[str, int]) -> None:
    """With an affinity to a label no node has, the DaemonSet controller schedules zero pods
    (desiredNumberScheduled 0) and the wait reports that as a failure instead of "ready: 0 of 0"."""
    affinity = (
        'affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":'
        '[{"matchExpressions":[{"key":"dlcharts.io/nobody-has-this","operator":"In","values":["true"]}]}]}}}'
    )
    with released(kube, cluster, "gpu-device-plugin", set_json=(affinity,)) as (release, source):
        install(kube, release, source)
        with pytest.raises(ClusterError) as failure:
            wait_ready(kube, release.namespace, release.name, timeout=60)
        message = str(failure.value)
        assert f"DaemonSet {release.name}-device-plugin matches no node" in message, message
        assert "desiredNumberScheduled 0" in message
        live = kube.get(f"/apis/apps/v1/namespaces/{release.namespace}/daemonsets/{release.name}-device-plugin")
        assert live["status"].get("desiredNumberScheduled", 0) == 0


# ----- failures are reported fast, with the reason --------------------------------------------------------------


@pytest.mark.parametrize(
    ("simulate", "reason"), [("image-pull-error", "ImagePullBackOff"), ("crash-loop", "CrashLoopBackOff")]
)
def test_container_that_cannot_run_fails_fast(kube: Kube, cluster: Any, simulate: str, reason: str) -> None:
    """A container that waits in ImagePullBackOff / CrashLoopBackOff (kwok reports what a kubelet would, on
    request of the dlcharts.io/simulate annotation) fails the wait at once, naming pod, container and reason."""
    with released(
        kube,
        cluster,
        "tensorflow-dist",
        "worker=1",
        "defaults.gpu.count=0",
        f"defaults.podAnnotations.{SIMULATE}={simulate}",
    ) as (release, source):
        install(kube, release, source)
        with pytest.raises(ClusterError) as failure:
            wait_ready(kube, release.namespace, release.name, timeout=120)
        assert f"container worker is waiting in {reason}" in str(failure.value), str(failure.value)


def test_pods_refused_by_pod_security_fail_fast(kube: Kube, cluster: Any) -> None:
    """cntk-dist (root MPI) in a `restricted` namespace: the server dry run names the violations, and once
    installed anyway, the Job controller's FailedCreate (forbidden by PodSecurity) fails the wait at once."""
    with released(kube, cluster, "cntk-dist", level="restricted") as (release, source):
        with pytest.raises(ClusterError, match="PodSecurity"):
            dry_run_server(kube, release, source)
        install(kube, release, source)
        with pytest.raises(ClusterError) as failure:
            wait_ready(kube, release.namespace, release.name, timeout=120)
        assert "cannot create its pods" in str(failure.value) and "forbidden" in str(failure.value), str(failure.value)


# ----- a lost worker pod ----------------------------------------------------------------------------------------


def test_deleted_worker_pod_is_replaced_within_backoff_limit_per_index(kube: Kube, cluster: Any) -> None:
    """Deleting a running worker pod (as a person or a failing node would): the Job controller counts one
    failure for that index and, after its per-index back-off (10 s for a first failure), creates a new pod
    for the same completion index (its budget is backoffLimitPerIndex); the Job still completes with no
    failed index. The deleted pod is worker 0, the index tensorflow-dist's successPolicy waits for (no
    chief), so the Job cannot complete without the replacement.

    Simulated: the container (20 s run, annotation), and what the kubelet does with a deleted running pod:
    kwok's pod-terminate stage stops it (exit 143, phase Failed). The charts' Jobs have a podFailurePolicy,
    so the Job controller waits for that terminal phase before it replaces a pod (podReplacementPolicy
    Failed), as on a real node."""
    with released(kube, cluster, "tensorflow-dist", "worker=2", f"defaults.podAnnotations.{RUN}=20s") as (
        release,
        source,
    ):
        install(kube, release, source)
        job_name = f"{release.name}-worker"
        first = poll(
            lambda: (lambda ps: ps if len(ps) == 2 else None)(running(pods_of(kube, release))), 60, "2 running workers"
        )
        victim = next(
            p for p in first if p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "0"
        )
        kube.request("DELETE", f"/api/v1/namespaces/{release.namespace}/pods/{victim['metadata']['name']}")

        def replacement() -> dict[str, Any] | None:
            for pod in pods_of(kube, release, "batch.kubernetes.io/job-completion-index=0"):
                if pod["metadata"]["uid"] != victim["metadata"]["uid"] and pod["spec"].get("nodeName"):
                    return pod
            return None

        new = poll(replacement, 90, "a new pod for completion index 0")
        assert new["metadata"]["name"] != victim["metadata"]["name"]
        wait_ready(kube, release.namespace, release.name, timeout=90)
        job = kube.get(f"/apis/batch/v1/namespaces/{release.namespace}/jobs/{job_name}")
        limit = job["spec"].get("backoffLimitPerIndex")
        assert limit is not None and limit >= 1, job["spec"]
        assert job["status"].get("failed") == 1 <= limit, job["status"]
        assert not job["status"].get("failedIndexes"), job["status"]
        assert "0" in job["status"].get("completedIndexes", "").split(","), job["status"]
        assert job_outcome(job) is not None and job_outcome(job)[0] == "succeeded", job["status"]


# ----- long-running roles end when the workers end ---------------------------------------------------------------

STUB_GETENT = """#!{python}
# Stand-in for `getent hosts|ahosts NAME`, answering like cluster DNS (CoreDNS) does for headless Services:
# <hostname>.<service>.<namespace>.svc resolves to the endpoint of that Service with that hostname,
# <service>.<namespace>.svc to all its endpoints; endpoints marked not-ready are left out. Reads the real
# EndpointSlices from the API server.
import os, sys
sys.path[:0] = {path!r}
from dlcharts.install.kube import Kube
if len(sys.argv) != 3 or sys.argv[1] not in ("hosts", "ahosts"):
    sys.exit(1)
name = sys.argv[2].rstrip(".")
parts = name.split(".")
if len(parts) == 3 and parts[2] == "svc":
    host, service, namespace = None, parts[0], parts[1]
elif len(parts) >= 4 and parts[3] == "svc":
    host, service, namespace = parts[0], parts[1], parts[2]
else:
    sys.exit(2)
with Kube.from_kubeconfig(os.environ["DLCHARTS_STUB_KUBECONFIG"]) as kube:
    slices = kube.items(f"/apis/discovery.k8s.io/v1/namespaces/{{namespace}}/endpointslices",
                       f"kubernetes.io/service-name={{service}}")
found = [ep["addresses"][0] for s in slices for ep in s.get("endpoints") or []
         if (host is None or ep.get("hostname") == host) and (ep.get("conditions") or {{}}).get("ready") is not False]
for address in found:
    print(address, "STREAM" if sys.argv[1] == "ahosts" else "", name)
sys.exit(0 if found else 2)
"""

# chart -> (values file, the role whose end ends the others, the long-running roles, the role whose
# watchdog runs locally)
LONG_RUNNING = {
    "tensorflow-dist": ("06-parameter-server-values.yaml", "chief", ("ps", "worker", "evaluator"), "ps"),
    "mxnet-dist": ("01-default-values.yaml", "worker", ("scheduler", "server"), "server"),
    "horovod-mpi": ("01-default-values.yaml", "launcher", ("worker",), "worker"),
}


def ready_pods(kube: Kube, release: Release) -> set[str]:
    """Pods the release's Service of ready pods (the watchdog's view) lists as ready."""
    slices = kube.items(
        f"/apis/discovery.k8s.io/v1/namespaces/{release.namespace}/endpointslices",
        f"kubernetes.io/service-name={release.name}-ready",
    )
    return {
        ep["targetRef"]["name"]
        for s in slices
        for ep in s.get("endpoints") or []
        if (ep.get("conditions") or {}).get("ready") is not False and ep.get("targetRef")
    }


def endpoint_hostnames(kube: Kube, release: Release) -> set[str]:
    slices = kube.items(
        f"/apis/discovery.k8s.io/v1/namespaces/{release.namespace}/endpointslices",
        f"kubernetes.io/service-name={release.name}",
    )
    return {ep.get("hostname") for s in slices for ep in s.get("endpoints") or [] if ep.get("hostname")}


@pytest.mark.parametrize("chart", sorted(LONG_RUNNING))
def test_long_running_roles_end_when_the_workers_end(kube: Kube, cluster: Any, chart: str, tmp_path: Path) -> None:
    """Parameter servers (TensorFlow), the MXNet scheduler and servers, and MPI sshd workers never exit on their
    own; the charts run them under dl-common's watchdog, which stops them once the pods they serve no longer
    resolve. kwok runs no processes, so this is proven in three parts on one real release:

    (a) real: the signal. While the served pods (chief / workers / launcher, 15 s run) run, the headless
        Service's EndpointSlices list them, and the release's Service of ready pods (`<release>-ready`) lists
        them ready; once they have completed, they are no longer ready there, while the long-running pods
        (still Running) stay listed.
    (b) real script, simulated DNS and program: the watchdog script exactly as the API server stores it in the
        long-running role's Job, run here with `sh`, the program replaced by `sleep 300`, DL_WATCH_INTERVAL=1
        and DL_WATCH_MISSES=2 (the chart's 10 s x 12), and `getent` on PATH answering from those real
        EndpointSlices the way cluster DNS does. It sees the peers, then their disappearance, stops the
        program and exits 0.
    (c) simulated exit, real consequence: the long-running pods are reported exited with code 0 (what the
        kubelet reports once the watchdog exits 0), the Job controller completes every Job, and no pod of the
        release is left Running or Pending holding a GPU.
    """
    values_file, served, long_roles, watchdog_role = LONG_RUNNING[chart]
    sets = [f"roles.{served}.podAnnotations.{RUN}=15s"] + [f"roles.{r}.podAnnotations.{RUN}=600s" for r in long_roles]
    with released(kube, cluster, chart, *sets, values_file=values_file) as (release, source):
        install(kube, release, source)
        prefix = f"{release.name}-"
        served_job = f"{release.name}-{served}"
        long_jobs = [f"{release.name}-{r}" for r in long_roles]

        # (a) while the served pods run, they are listed, next to the long-running ones
        def all_listed() -> set[str] | None:
            hosts = endpoint_hostnames(kube, release)
            jobs = [served_job, *long_jobs]
            return hosts if all(any(h.startswith(j + "-") for h in hosts) for j in jobs) else None

        poll(all_listed, 60, f"pods of {served_job} and {', '.join(long_jobs)} in the Service's EndpointSlices")

        # (b) the watchdog, started while its peers resolve
        job = kube.get(f"/apis/batch/v1/namespaces/{release.namespace}/jobs/{release.name}-{watchdog_role}")
        container = next(c for c in job["spec"]["template"]["spec"]["containers"] if c["name"] == watchdog_role)
        command = container["command"]
        if command[3] == "dl-entrypoint":  # tensorflow-dist composes TF_CONFIG first, then execs the watchdog
            command = command[4:]
        assert command[:2] == ["/bin/sh", "-c"] and command[3] == "dl-watchdog", command
        env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
        assert env["DL_WATCH_GROUPS"].startswith(served_job + ":"), env["DL_WATCH_GROUPS"]
        stubs = tmp_path / "bin"
        stubs.mkdir()
        (stubs / "getent").write_text(STUB_GETENT.format(python=sys.executable, path=[str(ROOT / "src")]))
        (stubs / "getent").chmod(0o755)
        run_env = {
            **os.environ,
            **env,
            "DL_WATCH_INTERVAL": "1",
            "DL_WATCH_MISSES": "2",
            "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
            "DLCHARTS_STUB_KUBECONFIG": str(cluster.kubeconfig),
        }
        watchdog = subprocess.Popen(
            ["sh", "-c", command[2], "dl-watchdog", "sleep", "300"],
            env=run_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            poll(
                lambda: any(p.startswith(served_job + "-") for p in ready_pods(kube, release)),
                60,
                f"pods of {served_job} ready in the Service {release.name}-ready",
            )
            poll(
                lambda: job_outcome(kube.get(f"/apis/batch/v1/namespaces/{release.namespace}/jobs/{served_job}")),
                60,
                f"Job {served_job} to finish",
            )

            # (a) once they completed, they are gone from the EndpointSlices; the long-running pods stay
            hosts = poll(
                lambda: (lambda h: h if not any(x.startswith(served_job + "-") for x in h) else None)(
                    endpoint_hostnames(kube, release)
                ),
                60,
                f"{served_job} pods to leave the EndpointSlices",
            )
            for j in long_jobs:
                assert any(h.startswith(j + "-") for h in hosts), (j, hosts)
            ready = ready_pods(kube, release)
            assert not any(p.startswith(served_job + "-") for p in ready), ready
            for j in long_jobs:
                assert any(p.startswith(j + "-") for p in ready), (j, ready)
            still = running(pods_of(kube, release))
            assert {p["metadata"]["labels"]["batch.kubernetes.io/job-name"] for p in still} == set(long_jobs)

            output, _ = watchdog.communicate(timeout=90)
        finally:
            if watchdog.poll() is None:
                watchdog.kill()
                watchdog.wait()
        assert watchdog.returncode == 0, output
        assert "peers [" in output and "are up" in output, output
        assert "the pods this role serves have finished; stopping sleep" in output, output

        # (c) the long-running pods exit 0: every Job completes, no pod holds a GPU
        gpu_holders_before = [p for p in running(pods_of(kube, release)) if pod_gpus(p)]
        for pod in running(pods_of(kube, release)):
            assert pod["metadata"]["name"].startswith(prefix)
            mark_exited(kube, pod)
        ready = wait_ready(kube, release.namespace, release.name)
        assert set(ready.jobs) == {served_job, *long_jobs, f"{release.name}-start-watch"}
        left = [p for p in pods_of(kube, release) if p["status"].get("phase") in ("Running", "Pending") and pod_gpus(p)]
        assert not left, [p["metadata"]["name"] for p in left]
        if chart != "mxnet-dist":  # MXNet's scheduler and servers hold no GPU; the others' long roles do
            assert gpu_holders_before, "the test would prove nothing: no long-running pod held a GPU"
