"""Queues and gangs for real: Kueue's manager and scheduler-plugins' coscheduling scheduler (dlcharts.cluster.addons)
take our charts' releases on an embedded cluster of fake GPU nodes (3 nodes x 4 GPUs).

- Quota: a ClusterQueue of 8 GPUs behind LocalQueue team-a; three tensorflow-dist releases of 4 workers x 1 GPU.
  Kueue admits two, the third stays suspended with its reason in `dlcharts` diagnostics, and is admitted when one
  of the first two finishes.
- Roles: a chief + ps + worker release is three Kueue workloads (one per Job) by default, which Kueue may admit
  apart (some roles run while others wait for quota), and one workload with ``kueue.podGroup=true``, admitted whole.
- Gang: with 6 GPUs free, an 8-worker job with ``gang.scheduler=scheduler-plugins`` binds no pod while a 4-GPU job
  beside it runs; once GPUs free up, all 8 bind together. Without the gang the same job takes the 6 free GPUs and
  waits, half-placed, for the other 2.

Each test prints its timeline (``pytest -s``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts.cluster import ClusterHandle
from dlcharts.cluster.addons.coscheduling import COSCHEDULER_NAME
from dlcharts.helm import find_helm
from dlcharts.install.diagnostics import diagnostics
from dlcharts.install.kube import Kube
from dlcharts.install.releases import ChartSource, Release, install
from dlcharts.install.state import conditions_by_type
from dlcharts.waiting import poll
from tests.support import CHARTS

pytestmark = pytest.mark.cluster

CHART = CHARTS / "tensorflow-dist"
GPU = "nvidia.com/gpu"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
QUEUE = "team-a"


@pytest.fixture(scope="module")
def qkube(queueing_cluster: ClusterHandle) -> Iterator[Kube]:
    with Kube.from_kubeconfig(queueing_cluster.kubeconfig) as kube:
        yield kube


@pytest.fixture
def qns(queueing_cluster: ClusterHandle, qkube: Kube) -> Iterator[str]:
    """A fresh namespace (Pod Security restricted), and a ClusterQueue of its own named after it, removed after
    (without waiting: a test that needs the GPUs free waits for that itself)."""
    name = f"q-{uuid.uuid4().hex[:8]}"
    queueing_cluster.create_namespace(name, "restricted")
    yield name
    queueing_cluster.delete_namespace(name, wait=False)
    qkube.request("DELETE", f"{KUEUE}/clusterqueues/{name}")


class Clock:
    """Seconds since the test's start, and a timeline printed as it goes."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def mark(self, what: str) -> float:
        now = round(time.monotonic() - self.start, 1)
        print(f"  t={now:6.1f}s  {what}")
        return now


def quota(kube: Kube, namespace: str, gpus: int) -> None:
    """ResourceFlavor default-flavor, a ClusterQueue named after the namespace with ``gpus`` GPUs (CPU and memory
    plenty), and LocalQueue team-a pointing at it."""
    kube.apply(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}
    )
    resources = {"cpu": "1000", "memory": "10Ti", GPU: str(gpus)}
    kube.apply({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": namespace},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [{
                "coveredResources": list(resources),
                "flavors": [{"name": "default-flavor",
                             "resources": [{"name": k, "nominalQuota": v} for k, v in resources.items()]}],
            }],
        },
    })  # fmt: skip
    kube.apply({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": namespace}, "spec": {"clusterQueue": namespace},
    })  # fmt: skip

    def active() -> bool:
        doc = kube.get(f"{KUEUE}/clusterqueues/{namespace}")
        return any(c["type"] == "Active" and c["status"] == "True" for c in doc.get("status", {}).get("conditions", []))

    poll(active, 60, f"ClusterQueue {namespace} to be Active")


def release(cluster: ClusterHandle, kube: Kube, namespace: str, name: str, values: Mapping[str, Any],
            tmp_path: Path) -> Release:  # fmt: skip
    """tensorflow-dist installed as ``name`` with ``values`` (helm install, no wait)."""
    values_file = tmp_path / f"{name}.yaml"
    values_file.write_text(yaml.safe_dump(dict(values)))
    rel = Release(find_helm(), cluster.kubeconfig, name, namespace)
    install(kube, rel, ChartSource(CHART, values_files=(values_file,)))
    return rel


def running_for(seconds: str) -> dict[str, Any]:
    """Values that make each fake pod run ``seconds`` (a duration) before it succeeds."""
    return {"defaults": {"podAnnotations": {"dlcharts.io/run-duration": seconds}}}


def workloads(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    return kube.items(f"{KUEUE}/namespaces/{namespace}/workloads")


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return conditions_by_type(obj).get(kind)


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    cond = condition(obj, kind)
    return bool(cond and cond["status"] == "True")


def owner_names(obj: Mapping[str, Any]) -> set[str]:
    return {r["name"] for r in obj["metadata"].get("ownerReferences") or []}


def workload_of_job(kube: Kube, namespace: str, job: str) -> dict[str, Any] | None:
    return next((w for w in workloads(kube, namespace) if job in owner_names(w)), None)


def suspended(kube: Kube, namespace: str, job: str) -> bool:
    return bool(kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{job}")["spec"].get("suspend"))


def pods(kube: Kube, namespace: str, instance: str) -> list[dict[str, Any]]:
    return kube.items(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"app.kubernetes.io/instance={instance}")


def bound(pod_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pod_list if p["spec"].get("nodeName")]


def gated(pod_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pod_list if p["spec"].get("schedulingGates")]


def test_two_of_three_jobs_fit_the_quota_and_the_third_runs_when_one_finishes(
    queueing_cluster: ClusterHandle, qkube: Kube, qns: str, tmp_path: Path
) -> None:
    quota(qkube, qns, gpus=8)
    clock = Clock()
    queued = {"worker": 4, "kueue": {"queueName": QUEUE}}
    first = {**queued, **running_for("20s")}
    for name in ("tf-a", "tf-b"):
        release(queueing_cluster, qkube, qns, name, first, tmp_path)
        clock.mark(f"installed {name} (4 workers x 1 GPU, 20 s each)")
    release(queueing_cluster, qkube, qns, "tf-c", {**queued, **running_for("5s")}, tmp_path)
    clock.mark("installed tf-c (4 workers x 1 GPU)")

    def two_admitted_one_waiting() -> dict[str, dict[str, Any]] | None:
        found = {job: workload_of_job(qkube, qns, f"{job}-worker") for job in ("tf-a", "tf-b", "tf-c")}
        if any(w is None for w in found.values()):
            return None
        waiting = condition(found["tf-c"], "QuotaReserved")  # type: ignore[arg-type]
        if is_true(found["tf-a"], "Admitted") and is_true(found["tf-b"], "Admitted") and waiting:  # type: ignore[arg-type]
            return found  # type: ignore[return-value]
        return None

    found = poll(two_admitted_one_waiting, 120, "Kueue to admit tf-a and tf-b and hold tf-c")
    clock.mark("Kueue admitted tf-a and tf-b; tf-c waits")
    reason = condition(found["tf-c"], "QuotaReserved")
    assert reason is not None and reason["status"] == "False" and not is_true(found["tf-c"], "Admitted"), found["tf-c"]
    assert "insufficient unused quota" in reason["message"] and GPU in reason["message"], reason
    print(f"  tf-c: QuotaReserved=False {reason['reason']}: {reason['message']}")
    for workload in found.values():
        assert [(ps["count"]) for ps in workload["spec"]["podSets"]] == [4], workload["spec"]["podSets"]
    poll(lambda: not suspended(qkube, qns, "tf-a-worker") and not suspended(qkube, qns, "tf-b-worker"), 60,
         "the admitted Jobs to be unsuspended")  # fmt: skip
    assert suspended(qkube, qns, "tf-c-worker") and pods(qkube, qns, "tf-c") == []
    text = diagnostics(qkube, qns, "tf-c")
    assert "tf-c-worker: completions 0/4 active 0 failed 0 suspended" in text, text
    assert "QuotaReserved=False (Pending: " in text and "insufficient unused quota" in text, text
    print("\n".join(line for line in text.splitlines() if "Kueue" in line or "queue team-a" in line))
    running = poll(lambda: len([p for p in pods(qkube, qns, "tf-a") + pods(qkube, qns, "tf-b")
                                if p["status"].get("phase") == "Running"]) == 8 or None, 60,
                   "the 8 admitted pods to run")  # fmt: skip
    assert running
    clock.mark("tf-a and tf-b: 8 pods Running on 8 GPUs")

    def finished() -> bool:
        return any(is_true(workload_of_job(qkube, qns, f"{j}-worker") or {}, "Finished") for j in ("tf-a", "tf-b"))

    poll(finished, 120, "tf-a or tf-b to finish")
    done_at = clock.mark("a first job finished; its quota is free")
    admitted = poll(lambda: is_true(workload_of_job(qkube, qns, "tf-c-worker") or {}, "Admitted"), 60,
                    "Kueue to admit tf-c")  # fmt: skip
    assert admitted
    admitted_at = clock.mark("Kueue admitted tf-c")
    assert admitted_at >= done_at
    poll(lambda: not suspended(qkube, qns, "tf-c-worker"), 60, "tf-c's Job to be unsuspended")
    poll(lambda: len(bound(pods(qkube, qns, "tf-c"))) == 4 or None, 60, "tf-c's 4 pods to be scheduled")
    clock.mark("tf-c: 4 pods scheduled")
    poll(lambda: is_true(workload_of_job(qkube, qns, "tf-c-worker") or {}, "Finished"), 120, "tf-c to finish")
    clock.mark("tf-c finished")


def test_roles_are_separate_workloads_unless_the_release_is_one_pod_group(
    queueing_cluster: ClusterHandle, qkube: Kube, qns: str, tmp_path: Path
) -> None:
    """chief (1 GPU) + ps (no GPU) + 2 workers (1 GPU each): 3 GPUs in all, against a quota of 2."""
    quota(qkube, qns, gpus=2)
    roles = {"chief": 1, "ps": 1, "worker": 2, **running_for("10s")}
    clock = Clock()
    release(queueing_cluster, qkube, qns, "per-job", {**roles, "kueue": {"queueName": QUEUE}}, tmp_path)
    jobs = ("per-job-chief", "per-job-ps", "per-job-worker")
    per_job = poll(lambda: (found := [workload_of_job(qkube, qns, j) for j in jobs]) and all(found) and found, 60,
                   "a Kueue workload for each of the 3 Jobs")  # fmt: skip
    settled = poll(
        lambda: (ws := [workload_of_job(qkube, qns, j) or {} for j in jobs])
        and all(is_true(w, "Admitted") or condition(w, "QuotaReserved") for w in ws) and ws,
        60, "Kueue to decide each workload",
    )  # fmt: skip
    admitted = [j for j, w in zip(jobs, settled, strict=True) if is_true(w, "Admitted")]
    clock.mark(f"without kueue.podGroup: {len(per_job)} workloads; admitted {admitted}")
    assert len(per_job) == 3
    assert 1 <= len(admitted) < 3, f"the roles were admitted apart: {admitted} of {jobs}"
    waiting = [j for j in jobs if j not in admitted]
    assert all(suspended(qkube, qns, j) for j in waiting) and not any(suspended(qkube, qns, j) for j in admitted)
    for job in jobs:  # their workloads go with them, and the quota they held
        qkube.request(
            "DELETE", f"/apis/batch/v1/namespaces/{qns}/jobs/{job}", query={"propagationPolicy": "Background"}
        )
    poll(lambda: not [w for w in workloads(qkube, qns) if owner_names(w) & set(jobs)], 60, "per-job's workloads to go")

    group = {**roles, "kueue": {"queueName": QUEUE, "podGroup": True}}
    release(queueing_cluster, qkube, qns, "whole", group, tmp_path)
    pod_list = poll(lambda: len(p := pods(qkube, qns, "whole")) == 4 and p, 60, "the 4 pods of release whole")
    group_workloads = poll(
        lambda: [w for w in workloads(qkube, qns) if owner_names(w) & {p["metadata"]["name"] for p in pod_list}],
        60, "Kueue's workload for release whole",
    )  # fmt: skip
    assert len(group_workloads) == 1, [w["metadata"]["name"] for w in group_workloads]
    workload = group_workloads[0]
    assert sum(ps["count"] for ps in workload["spec"]["podSets"]) == 4, workload["spec"]["podSets"]
    poll(lambda: condition(workload_named(qkube, qns, workload), "QuotaReserved"), 60, "Kueue to decide the pod group")
    held = pods(qkube, qns, "whole")
    clock.mark(
        f"with kueue.podGroup: 1 workload; admitted: no; pods gated {len(gated(held))}/4, bound {len(bound(held))}"
    )
    assert not is_true(workload_named(qkube, qns, workload), "Admitted")
    assert len(gated(held)) == 4 and bound(held) == [], "a pod of the group started before the group was admitted"

    quota(qkube, qns, gpus=3)  # now the whole release fits
    poll(lambda: is_true(workload_named(qkube, qns, workload), "Admitted"), 60, "Kueue to admit the pod group")
    clock.mark("quota raised to 3 GPUs: the pod group is admitted")
    released = poll(lambda: len(bound(p := pods(qkube, qns, "whole"))) == 4 and p, 60, "all 4 pods to be scheduled")
    assert gated(released) == []
    clock.mark("all 4 roles' pods scheduled together")
    # A pod group keeps Kueue's finalizer on its pods until every pod has succeeded (a failed pod may be replaced),
    # so the release is let finish before its namespace goes (see the README: deleting an unfinished group).
    poll(lambda: is_true(workload_named(qkube, qns, workload), "Finished"), 120, "the pod group to finish")
    clock.mark("the pod group finished")


def workload_named(kube: Kube, namespace: str, workload: Mapping[str, Any]) -> dict[str, Any]:
    return dict(kube.get(f"{KUEUE}/namespaces/{namespace}/workloads/{workload['metadata']['name']}"))


def filler(kube: Kube, namespace: str, name: str, gpus: int, seconds: int) -> None:
    """A Job of ``gpus`` pods of 1 GPU each that run ``seconds`` on the fake nodes: GPUs taken for that long."""
    container = {
        "name": "hold", "image": "busybox",
        "resources": {"limits": {GPU: "1"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                            "runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
    }  # fmt: skip
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"completions": gpus, "parallelism": gpus, "template": {
            "metadata": {"annotations": {"dlcharts.io/run-duration": f"{seconds}s"}},
            "spec": {"restartPolicy": "Never", "containers": [container]}}},
    }  # fmt: skip
    resp = kube.request("POST", f"/apis/batch/v1/namespaces/{namespace}/jobs", body=job)
    assert resp.status == 201, resp.doc
    poll(lambda: len(bound(kube.items(f"/api/v1/namespaces/{namespace}/pods", label_selector=f"job-name={name}")))
         == gpus, 60, f"{name}'s {gpus} pods to be bound")  # fmt: skip


ACTIVE = ("Pending", "Running")


def free_gpus(kube: Kube) -> int:
    total = sum(int(n["status"]["allocatable"].get(GPU, 0)) for n in kube.items("/api/v1/nodes"))
    placed = [p for p in kube.items("/api/v1/pods") if p["spec"].get("nodeName") and p["status"].get("phase") in ACTIVE]
    used = sum(
        int(c.get("resources", {}).get("limits", {}).get(GPU, 0)) for p in placed for c in p["spec"]["containers"]
    )
    return total - used


@pytest.mark.parametrize("gang", [True, False], ids=["gang", "no-gang"])
def test_eight_workers_bind_all_at_once_or_not_at_all(
    gang: bool, queueing_cluster: ClusterHandle, qkube: Kube, qns: str, tmp_path: Path
) -> None:
    clock = Clock()
    poll(lambda: free_gpus(qkube) == 12, 120, "the 12 GPUs of the cluster to be free (earlier tests' pods to go)")
    filler(qkube, qns, "filler", gpus=6, seconds=30)
    assert free_gpus(qkube) == 6
    clock.mark("filler: 6 GPUs taken for 30 s; 6 free")
    values: dict[str, Any] = {"worker": 8, **running_for("10s")}
    if gang:
        values["gang"] = {"scheduler": "scheduler-plugins"}
    release(queueing_cluster, qkube, qns, "big", values, tmp_path)
    clock.mark(f"installed big: 8 workers x 1 GPU{', gang.scheduler=scheduler-plugins' if gang else ''}")
    big = poll(lambda: len(p := pods(qkube, qns, "big")) == 8 and p, 60, "the 8 pods of big")
    assert {p["spec"]["schedulerName"] for p in big} == {COSCHEDULER_NAME if gang else "default-scheduler"}
    if not gang:
        placed = poll(lambda: len(bound(p := pods(qkube, qns, "big"))) == 6 and p, 60, "6 of big's pods to be bound")
        clock.mark("without the gang: 6 of 8 bound, holding 6 GPUs while 2 wait")
        waiting = [p for p in placed if not p["spec"].get("nodeName")]
        sched = [condition(p, "PodScheduled") or {} for p in waiting]
        assert len(waiting) == 2 and all("Insufficient nvidia.com/gpu" in c.get("message", "") for c in sched), sched
        return

    release(queueing_cluster, qkube, qns, "small", {"worker": 4, **running_for("10s")}, tmp_path)
    poll(lambda: len(bound(pods(qkube, qns, "small"))) == 4 or None, 60, "small's 4 pods to be bound")
    clock.mark("installed small (4 workers x 1 GPU, default scheduler): 4 bound beside big")
    group = qkube.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{qns}/podgroups/big")
    assert group["spec"]["minMember"] == 8
    most = 0
    start = time.monotonic()
    while time.monotonic() - start < 10:  # the gang while the filler runs: 6 GPUs were free, now 2
        most = max(most, len(bound(pods(qkube, qns, "big"))))
        time.sleep(0.5)
    clock.mark(f"big while GPUs were short: at most {most} of 8 bound")
    assert most == 0
    print(diagnostics(qkube, qns, "big").split("Events in")[0])

    times: dict[str, float] = {}

    def all_bound() -> bool:
        now = time.monotonic()
        for pod in bound(pods(qkube, qns, "big")):
            times.setdefault(pod["metadata"]["name"], now)
        return len(times) == 8

    poll(all_bound, 120, "all 8 pods of big to be bound", interval=0.2)
    clock.mark(f"GPUs freed: 8 of 8 bound within {max(times.values()) - min(times.values()):.1f} s of each other")
    assert max(times.values()) - min(times.values()) < 5
