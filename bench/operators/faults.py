"""The failure cases of ``python -m bench.operators faults`` and their injectors: a fault injected into a running
job at its first training step (a worker pod deleted, its node lost), or made into the job from its create (the
workers' image missing, every rank failing)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from dlcharts.cluster import faults
from dlcharts.cluster.embedded import ClusterHandle
from dlcharts.cluster.node import RealNode
from dlcharts.install import Kube
from tests.support.cluster import CHECKPOINT_ARGS


def victim(pods: list[dict[str, Any]]) -> str | None:
    """A worker pod that is not rank 0: the pod of completion index 1 (our Jobs, TrainJob's JobSet; not an MXNet
    server's or scheduler's); PyTorchJob's ``*-worker-0`` (its Master is rank 0) and MPIJob's ``*-worker-0`` (its
    launcher runs no rank); TFJob's ``*-worker-1`` (its worker 0 is the chief)."""
    names = [str(p["metadata"]["name"]) for p in pods]
    rank_0_elsewhere = any("-master-" in n or "-launcher" in n for n in names)
    for pod, name in zip(pods, names, strict=True):
        index = (pod["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index")
        ps_lite = re.search(r"-(server|scheduler)-\d", name)
        if (index == "1" and not ps_lite) or name.endswith("-worker-0" if rank_0_elsewhere else "-worker-1"):
            return name
    return None


#: a fault injected into a running job: (the API, the job's namespace) -> what it did
Inject = Callable[[Kube, str], dict[str, Any]]


def training_victim(kube: Kube, namespace: str) -> str | None:
    """:func:`victim`, but with hot spares (our ``ours-spare``: more worker pods than ranks, the rendezvous or the
    MPI launcher choosing which train) the pod that runs rank 1: the one whose log says so (bench_ddp), or the
    second host of the MPI launcher's last ``ranks on:`` line."""
    pods = kube.items(f"/api/v1/namespaces/{namespace}/pods")
    indexes = [(p["metadata"].get("annotations") or {}).get("batch.kubernetes.io/job-completion-index") for p in pods]
    if "2" not in indexes:
        return victim(pods)
    running = [str(p["metadata"]["name"]) for p in pods if (p.get("status") or {}).get("phase") == "Running"]

    def log(name: str) -> str:
        return str(kube.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log").doc or "")

    for name in running:
        if "-launcher-" in name and (ranks := re.findall(r"mpi-launcher: ranks on: \S+ (\S+)", log(name))):
            host = ranks[-1].split(".")[0]
            return next((n for n in running if n.startswith(f"{host}-")), None)
    return next((n for n in running if "-worker-" in n and re.search(r"bench_ddp: rank 1/\d+ on ", log(n))),
                victim(pods))  # fmt: skip


def delete_worker(kube: Kube, namespace: str) -> dict[str, Any]:
    """The fault ``worker-deleted``: delete :func:`training_victim` at once (grace period 0)."""
    name = training_victim(kube, namespace)
    if name:
        kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query={"gracePeriodSeconds": "0"})
    return {"victim": name}


def node_loser(handle: ClusterHandle, lost: list[RealNode]) -> Inject:
    """The fault ``node-lost``: the real node of :func:`victim` is lost (its pods cut off, then every process of
    the node killed: dlcharts.cluster.faults.lose), and appended to ``lost`` for the restore. Never the first real
    node, which holds `dlcharts run`'s relay to the API server (run.api_relay; a real cluster's API server is on no
    worker node): when the victim is there, the node of another pod of the job is lost instead."""
    relay_node = handle.real_node["name"] if handle.real_node else None

    def lose(kube: Kube, namespace: str) -> dict[str, Any]:
        pods = kube.items(f"/api/v1/namespaces/{namespace}/pods")
        name = victim(pods)
        nodes = {str(p["metadata"]["name"]): (p.get("spec") or {}).get("nodeName") for p in pods}
        if nodes.get(name or "") == relay_node:
            name = next((p for p, n in sorted(nodes.items()) if n and n != relay_node), name)
        node = nodes.get(name or "")
        if not node:
            return {"victim": name, "error": "the victim has no node"}
        lost.append(faults.real_node(handle.state_dir, handle.name, node))
        faults.lose(lost[-1])
        return {"victim": name, "node": node, "pods_on_node": sorted(p for p, n in nodes.items() if n == node)}

    return lose


def missing_image(image: str) -> str:
    return f"{image.rsplit(':', 1)[0]}:bench-missing"


def break_worker_image(resource: dict[str, Any]) -> None:
    """The fault ``image-missing`` in an operator's job: its workers' image (not the PyTorchJob's Master's nor
    the MPIJob's launcher's; a TrainJob's nodes are one role) names a tag the registry does not have."""
    spec = resource["spec"]
    if resource["kind"] == "TrainJob":
        spec["trainer"]["image"] = missing_image(spec["trainer"]["image"])
        return
    replicas = next(v for k, v in spec.items() if k.endswith("ReplicaSpecs"))
    container = replicas["Worker"]["template"]["spec"]["containers"][0]
    container["image"] = missing_image(container["image"])


@dataclasses.dataclass(frozen=True)
class Fault:
    """A failure case: the jobs it runs in; our chart's values for it (also in the render the operators' jobs are
    made from); ``injector``: what makes the fault injected at the first training step, from the cluster and the
    list of nodes to restore after the run (without one, the fault is made into the job from its create, by
    ``breaks`` for an operator's job)."""

    jobs: tuple[str, ...]
    helm_args: dict[str, tuple[str, ...]]
    injector: Callable[[ClusterHandle, list[RealNode]], Inject] | None = None
    breaks: Callable[[dict[str, Any]], None] | None = None
    #: our chart's values for it that the operators' jobs do not take (ours only)
    ours_args: tuple[str, ...] = ()


#: each run must outlast a fault injected at its first step
_LONG: dict[str, tuple[str, ...]] = {
    "pytorch": ("--set", "benchmark.steps=200"),
    "tensorflow": ("--set", "benchmark.steps=300"),
    "horovod": ("--set", "benchmark.iterations=10"),  # about 70 s on this machine
    "mxnet": ("--set", "benchmark.steps=3000"),  # about 70 steps a second: about 45 s
    "jax": ("--set", "benchmark.steps=300"),
    "deepspeed": ("--set", "benchmark.steps=60"),
}
_EVERY = ("pytorch", "horovod", "tensorflow", "mxnet", "jax", "deepspeed")
#: with --checkpoint: how often each benchmark saves (horovod: every iteration of 10 batches) into the claim of
#: CHECKPOINT_ARGS (the chart's checkpoint volume, kept in the operators' jobs made from its render); mxnet and
#: jax's benchmarks keep none
CHECKPOINT_EVERY = {"pytorch": 20, "horovod": 10, "tensorflow": 20, "deepspeed": 10}
#: with --checkpoint the fault comes once a checkpoint or two exist (Job.fault_at): step 60 of 200 (saved at 20, 40,
#: 60), iteration 3 of 10 (saved after each), step 60 of 300, step 30 of 60
CHECKPOINT_FAULT_AT = {"pytorch": r"bench_ddp: step 60/", "horovod": r"iteration 3: ",
                       "tensorflow": r"bench_tf: step 60/", "deepspeed": r"ds-bench: step 30/"}  # fmt: skip


def checkpoint_args(job_name: str) -> tuple[str, ...]:
    every = CHECKPOINT_EVERY.get(job_name)
    return (*CHECKPOINT_ARGS, "--set", f"checkpoint.everySteps={every}") if every else ()


FAULTS: dict[str, Fault] = {
    "worker-deleted": Fault(_EVERY, _LONG, injector=lambda _handle, _lost: delete_worker),
    "node-lost": Fault(_EVERY, _LONG, injector=node_loser),
    # our start watch ends a release whose pod has not started peerWait.timeoutSeconds after its Job (default 900
    # s): 60 s here; the operators have no such bound (a job waits until activeDeadlineSeconds, none by default)
    "image-missing": Fault(("pytorch", "horovod"), {}, breaks=break_worker_image,
                           ours_args=("--set", "roles.worker.image.tag=bench-missing",
                                      "--set", "peerWait.timeoutSeconds=60")),
    # every rank exits 3 at once, so mpirun (horovodrun for ours) fails: the launcher's retries and the verdict
    "launcher-failing": Fault(("horovod",), {"horovod": ("--set-json", 'horovod.command=["python", "-c", '
                                                        '"raise SystemExit(3)"]')}),
}  # fmt: skip
