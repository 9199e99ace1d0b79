"""Node faults in the middle of training, on the session's real nodes (dlcharts.cluster.faults), with bounded outcomes.

The real-training session runs on two real nodes (DLCHARTS_REAL_NODES=2), so `dlcharts run`'s spread puts the two
pytorch-dist workers on different hosts. The fault hits the node of worker 1 once worker 0 (rank 0) logs a step:

- a partition (the traffic between the two nodes' pods dropped) that heals within the chart's collective timeout:
  the collectives wait, resume, and the job completes with equal checksums;
- the node lost (its pods cut off, every process of the node killed at once): the survivor's collective fails at
  the chart's `collectiveTimeoutSeconds`, not PyTorch's 30 minutes, the node turns NotReady after the controller's
  grace period, and once the node is back (restored, as a rebooted host) the Job replaces both ranks and completes.

Each test restores the node it hit, so the tests after it find both nodes Ready.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dlcharts.cluster import ClusterHandle, faults, poll
from dlcharts.host import procs
from dlcharts.install import Kube

pytestmark = pytest.mark.cluster

#: the collective timeout the tests give pytorch-dist (collectiveTimeoutSeconds)
TIMEOUT = 30
#: Kubernetes' node-monitor-grace-period (the embedded cluster's controller-manager runs the default)
GRACE = 50


@pytest.fixture
def two_nodes(embedded_cluster: ClusterHandle) -> Iterator[ClusterHandle]:
    names = [n["name"] for n in embedded_cluster.real_nodes]
    assert len(names) >= 2, (
        f"cluster {embedded_cluster.name} has the real nodes {names}; these tests need two "
        "(DLCHARTS_REAL_NODES=2, as make test runs them, on a new cluster)"
    )
    yield embedded_cluster
    for name in names:  # whatever a test did, its node is back for the next test
        node = faults.real_node(embedded_cluster.state_dir, embedded_cluster.name, name)
        faults.rejoin(node)
        if not all(procs.alive(pid) for pid in node.layout.pids().values()) or not _ready(embedded_cluster, name):
            faults.restore(node, embedded_cluster.kubeconfig, 300)


def _ready(cluster: ClusterHandle, node: str) -> bool:
    with Kube.from_kubeconfig(cluster.kubeconfig) as kube:
        conditions = kube.get(f"/api/v1/nodes/{node}")["status"]["conditions"]
    return [c["status"] for c in conditions if c["type"] == "Ready"] == ["True"]


def _pod(kube: Kube, namespace: str, release: str, index: int) -> dict[str, Any]:
    selector = f"batch.kubernetes.io/job-name={release}-worker,batch.kubernetes.io/job-completion-index={index}"
    pods = kube.items(f"/api/v1/namespaces/{namespace}/pods", selector)
    return min(pods, key=lambda p: p["metadata"]["creationTimestamp"])  # the first one, not a replacement


def fault_on_line(
    cluster: ClusterHandle, real_run: Any, release: str, trigger: re.Pattern[str], then: Callable[[Any, dict], None]
) -> tuple[Callable[[str], None], dict[str, Any]]:
    """An ``on_line`` that, the first time a line matches ``trigger``, runs ``then(node, found)`` in a thread with
    the real node of worker 1's pod; ``found`` records ``node``, ``at`` (the match) and what ``then`` adds."""
    found: dict[str, Any] = {}

    def act() -> None:
        try:
            with Kube.from_kubeconfig(cluster.kubeconfig) as kube:
                name = _pod(kube, real_run.namespace, release, 1)["spec"]["nodeName"]
            found["node"] = name
            then(faults.real_node(cluster.state_dir, cluster.name, name), found)
        except BaseException as exc:  # reported by the test
            found["error"] = exc

    def on_line(line: str) -> None:
        if "at" not in found and trigger.search(line):
            found["at"] = time.monotonic()
            threading.Thread(target=act, daemon=True).start()

    return on_line, found


def test_a_partition_healed_within_the_collective_timeout_lets_pytorch_finish(real_run, two_nodes) -> None:  # type: ignore[no-untyped-def]
    """Worker 1's node is cut off from worker 0's for 15 s mid-training (TCP retransmits meanwhile), then rejoins:
    the collectives resume, both ranks finish with the same parameters, and no pod failed."""

    def partition(node: Any, found: dict[str, Any]) -> None:
        faults.isolate(node)
        time.sleep(15)
        faults.rejoin(node)
        found["healed"] = time.monotonic()

    on_line, found = fault_on_line(
        two_nodes, real_run, "part", re.compile(r"^\[part-worker-0-\w+/worker\] bench_ddp: step 30/300 "), partition
    )
    result, log = real_run(
        "pytorch-dist", "part", "--set", "worker=2", "--set", "benchmark.steps=300",
        "--set", f"collectiveTimeoutSeconds={TIMEOUT}", on_line=on_line,
    )  # fmt: skip
    assert "error" not in found, found
    assert "healed" in found, f"the partition never ran: {found}"
    assert result.ok, result.problem
    assert {p.node for p in result.pods} == {n["name"] for n in two_nodes.real_nodes}, result.pods
    assert [(p.phase, p.exit_code) for p in result.pods] == [("Succeeded", 0)] * 2, result.pods  # no retry
    checksums = re.findall(r"bench_ddp: rank \d final parameters sha256 ([0-9a-f]{64})", log)
    assert len(checksums) == 2 and len(set(checksums)) == 1, checksums
    print(f"partition of {found['node']} for 15 s at step 30/300; job {result.seconds:.0f}s, no pod failed")


def test_a_lost_node_fails_the_survivor_at_the_collective_timeout_and_the_job_recovers_when_it_is_back(  # type: ignore[no-untyped-def]
    real_run, two_nodes
) -> None:
    """Worker 1's node is lost mid-training. Worker 0's all-reduce fails after collectiveTimeoutSeconds (not after
    PyTorch's 30 minutes), the node turns NotReady after the controller's grace period, and when the node is
    restored (a rebooted host: its kubelet finds its old pod's containers gone and fails it) the Job retries both
    indexes, which train from the start and complete."""

    def lose_then_restore(node: Any, found: dict[str, Any]) -> None:
        faults.lose(node)
        cluster = two_nodes
        with Kube.from_kubeconfig(cluster.kubeconfig) as kube:
            first = _pod(kube, real_run.namespace, "lost", 0)["metadata"]["name"]

            def survivor_failed() -> bool:
                return kube.get(f"/api/v1/namespaces/{real_run.namespace}/pods/{first}")["status"]["phase"] == "Failed"

            poll(survivor_failed, TIMEOUT + 120, f"worker 0's pod {first} to fail", interval=1)
            found["survivor_failed"] = time.monotonic()
            poll(lambda: not _ready(cluster, node.name), GRACE + 60, f"{node.name} to turn NotReady", interval=1)
            found["not_ready"] = time.monotonic()
        faults.restore(node, cluster.kubeconfig, 300)
        found["restored"] = time.monotonic()

    on_line, found = fault_on_line(
        two_nodes, real_run, "lost", re.compile(r"^\[lost-worker-0-\w+/worker\] bench_ddp: step 30/300 "),
        lose_then_restore,
    )  # fmt: skip
    result, log = real_run(
        "pytorch-dist", "lost", "--set", "worker=2", "--set", "benchmark.steps=300",
        "--set", f"collectiveTimeoutSeconds={TIMEOUT}", on_line=on_line,
    )  # fmt: skip
    assert "error" not in found, found
    assert "restored" in found, f"the fault never finished: {found}"
    failed_after = found["survivor_failed"] - found["at"]
    # the collective timeout, plus torchrun noticing its worker's exit and the pod ending
    assert TIMEOUT <= failed_after <= TIMEOUT + 60, f"worker 0 failed {failed_after:.0f}s after the fault"
    # gloo says it in several words: "Timed out", "Application timeout caused pair closure", "Connection closed by peer"
    assert re.search(r"\[lost-worker-0-\w+/worker\] .*(timed out|timeout|connection closed by peer)", log, re.I), log
    assert result.ok, result.problem
    assert result.jobs == {"lost-worker": "Complete"}
    failed = sorted(p.name for p in result.pods if p.phase == "Failed")
    assert len(failed) == 2, result.pods  # the first pod of each index; each was retried once
    checksums = re.findall(r"bench_ddp: rank \d final parameters sha256 ([0-9a-f]{64})", log)
    assert len(checksums) >= 2 and len(set(checksums[-2:])) == 1, checksums
    print(
        f"lost {found['node']} at step 30/300: worker 0 failed {failed_after:.0f}s later, the node NotReady "
        f"{found['not_ready'] - found['at']:.0f}s after the fault, restored after "
        f"{found['restored'] - found['at']:.0f}s; job {result.seconds:.0f}s"
    )
