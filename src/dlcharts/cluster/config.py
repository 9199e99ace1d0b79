"""What the embedded cluster looks like: its fake nodes (GPU and CPU-only) and how fast fake pods run."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import ipaddress
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster.addons import ALL
from dlcharts.cluster.node_layout import LONGEST_RANGE_PREFIX, MAX_REAL_NODES
from dlcharts.errors import ClusterError
from dlcharts.host.binaries import KUBERNETES_VERSION, control_plane_binaries
from dlcharts.utils.digest import json_digest

_HERE = Path(__file__).resolve().parent
STAGES_DIR = _HERE / "stages"
NODE_TEMPLATE = _HERE / "templates" / "node.yaml"

H100_LABELS: Mapping[str, str] = {
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.family": "hopper",
}

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


@dataclasses.dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclasses.dataclass(frozen=True)
class NodePool:
    """``count`` identical fake nodes named ``<name>-0`` ... ``<name>-<count-1>``.

    ``gpus`` > 0 adds ``gpu_resource`` (default ``nvidia.com/gpu``) to capacity and allocatable and a
    ``nvidia.com/gpu.count`` label; ``labels`` are added to every node (plus ``kubernetes.io/hostname``).
    """

    name: str
    count: int
    gpus: int = 0
    gpu_resource: str = "nvidia.com/gpu"
    cpu: str = "64"
    memory: str = "512Gi"
    pods: int = 110
    ephemeral_storage: str = "1Ti"
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    taints: tuple[Taint, ...] = ()

    def validate(self, where: str) -> None:
        if not _DNS_LABEL.match(self.name) or len(self.name) > 50:
            raise ClusterError(f"{where}.name: {self.name!r} is not a DNS label of at most 50 characters")
        if self.count < 0:
            raise ClusterError(f"{where}.count: {self.count} is negative; use 0 or more nodes")
        if self.gpus < 0:
            raise ClusterError(f"{where}.gpus: {self.gpus} is negative; use 0 for CPU-only nodes")
        for field in ("cpu", "memory", "ephemeral_storage"):
            value = getattr(self, field)
            if not _QUANTITY.match(str(value)):
                raise ClusterError(f"{where}.{field}: {value!r} is not a Kubernetes quantity (e.g. 64, 512Gi)")
        if "/" not in self.gpu_resource:
            raise ClusterError(f"{where}.gpu_resource: {self.gpu_resource!r} needs a domain, e.g. nvidia.com/gpu")
        for taint in self.taints:
            if taint.effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ClusterError(
                    f"{where}.taints: effect {taint.effect!r} must be NoSchedule, PreferNoSchedule or NoExecute"
                )

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


def validate_pools(pools: tuple[NodePool, ...]) -> None:
    """Each pool valid, their names distinct, and a node among them."""
    names: set[str] = set()
    for i, pool in enumerate(pools):
        pool.validate(f"node_pools[{i}]")
        if pool.name in names:
            raise ClusterError(f"node_pools[{i}].name: {pool.name!r} is used twice; pool names must differ")
        names.add(pool.name)
    if not any(p.count for p in pools):
        raise ClusterError("node_pools: no nodes at all; nothing could be scheduled (give a pool count >= 1)")


def default_node_pools() -> tuple[NodePool, ...]:
    """4 x 8 H100 GPU nodes and 2 CPU-only nodes."""
    return (
        NodePool(name="gpu", count=4, gpus=8, cpu="192", memory="2Ti", labels=dict(H100_LABELS)),
        NodePool(name="cpu", count=2, cpu="64", memory="256Gi"),
    )


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """Everything that decides what ``EmbeddedCluster.start()`` brings up.

    name:              cluster name; state lives in ``$DLCHARTS_CACHE/clusters/<name>`` and a running
                       cluster of the same name is reused.
    node_pools:        the fake nodes (default: 4 x 8-GPU H100 nodes + 2 CPU-only nodes).
    pod_run_seconds:   how long a fake Job pod (or bare restartPolicy Never/OnFailure pod) runs before
                       it Succeeds; a pod may override with the annotation dlcharts.io/run-duration: "30s".
    start_timeout:     seconds to wait for the control plane, nodes and default ServiceAccount.
    cache:             overrides ``$DLCHARTS_CACHE``.
    pod_cidr:          the range kwok hands fake pod IPs out of (never routed anywhere).
    api_qps:           --kube-api-qps of kube-controller-manager and kube-scheduler (burst is twice this).
    real_node:         also run real nodes (containerd + kubelet + CoreDNS on this machine, root only; see
                       dlcharts.cluster.node), labelled and tainted dlcharts.io/node-type=real.
    real_nodes:        how many (1 to 4: real-0, real-1, ...), each a host of its own, routed to the others.
                       None: 1 for a new cluster, and whatever runs for a reused one (a number that differs
                       from the running cluster's is refused).
    real_node_cidr:    the real nodes' pod range (an IPv4 /16../26 used on no interface), cut in 4 parts, one per
                       node; empty: a /24 in 10.250.0.0/16 derived from the cluster name.
    kubernetes_version: the control plane's version, one of binaries.CLUSTER_VERSIONS: the pinned one, or the
                       oldest minor the charts support (fake nodes only: the real node's kubelet is the pinned
                       version, and a kubelet must not be newer than its API server).
    addons:            real controllers started with the cluster (dlcharts.cluster.addons): "kueue" (Kueue's
                       manager, webhooks and CRDs) and "coscheduling" (a second kube-scheduler with scheduler-plugins'
                       coscheduling, named scheduler-plugins-scheduler); for benchmarks, the training operators of
                       dlcharts.cluster.addons.operators ("training-operator", "mpi-operator", "jobset", "trainer"). A
                       running cluster that is reused gets the ones it lacks.
    """

    name: str = "dlcharts"
    node_pools: tuple[NodePool, ...] = dataclasses.field(default_factory=default_node_pools)
    pod_run_seconds: float = 2.0
    start_timeout: float = 300.0
    cache: Path | None = None
    pod_cidr: str = "10.0.0.1/16"
    # kube-controller-manager and kube-scheduler send at most 20 API requests/s by default; the Job controller
    # then creates ~18 pods/s, which paced a 1000-worker job to ~55 s (bench/results.md, section 4).
    api_qps: int = 200
    real_node: bool = True
    real_nodes: int | None = None
    real_node_cidr: str = ""
    kubernetes_version: str = KUBERNETES_VERSION
    addons: tuple[str, ...] = ()

    def validate(self) -> None:
        control_plane_binaries(self.kubernetes_version)  # a version it cannot run: the error names both it can
        if self.real_node and self.kubernetes_version != KUBERNETES_VERSION:
            raise ClusterError(
                f"a Kubernetes {self.kubernetes_version} cluster cannot have the real node (its kubelet is "
                f"{KUBERNETES_VERSION}, newer than that API server); start it with fake nodes only "
                "(real_node=False, or --no-real-node)"
            )
        unknown = sorted(set(self.addons) - set(ALL))
        if unknown:
            raise ClusterError(f"addons: {', '.join(map(repr, unknown))} unknown; choose from {', '.join(ALL)}")
        if self.api_qps < 1:
            raise ClusterError(f"api_qps must be >= 1 (requests per second), not {self.api_qps}")
        if not _DNS_LABEL.match(self.name) or len(self.name) > 40:
            raise ClusterError(f"cluster name {self.name!r} must be a DNS label of at most 40 characters")
        validate_pools(self.node_pools)
        if self.pod_run_seconds < 0:
            raise ClusterError(f"pod_run_seconds: {self.pod_run_seconds} is negative")
        if self.start_timeout <= 0:
            raise ClusterError(f"start_timeout: {self.start_timeout} must be positive")
        self._validate_real_nodes()

    def _validate_real_nodes(self) -> None:
        """How many real nodes, and their range."""
        if self.real_nodes is not None and not 1 <= self.real_nodes <= MAX_REAL_NODES:
            raise ClusterError(
                f"real_nodes: {self.real_nodes} is not 1 to {MAX_REAL_NODES} (`--real-nodes N`); "
                "for none, start with fake nodes only (real_node=False, or --no-real-node)"
            )
        if self.real_node_cidr:
            try:
                net = ipaddress.ip_network(self.real_node_cidr)
            except ValueError:
                net = None
            if not isinstance(net, ipaddress.IPv4Network) or not 16 <= net.prefixlen <= LONGEST_RANGE_PREFIX:
                raise ClusterError(
                    f"real_node_cidr: {self.real_node_cidr!r} is not an IPv4 network of /16 to "
                    f"/{LONGEST_RANGE_PREFIX} (host bits zero), e.g. 10.250.7.0/24"
                )

    @property
    def real_node_count(self) -> int:
        """The real nodes a new cluster of this config starts."""
        return 0 if not self.real_node else self.real_nodes or 1

    def control_plane_fingerprint(self) -> str:
        """Hash of what cannot change on a running cluster (stages, pod CIDR, versions)."""
        doc = {"pod_run_seconds": self.pod_run_seconds, "pod_cidr": self.pod_cidr, "kube": self.kubernetes_version,
               "api_qps": self.api_qps, "real_node": self.real_node, "real_node_cidr": self.real_node_cidr}  # fmt: skip
        doc["stages"] = sorted(p.name + ":" + hashlib.sha256(p.read_bytes()).hexdigest() for p in stage_files())
        return json_digest(doc, 16)


def stage_files() -> list[Path]:
    return sorted(STAGES_DIR.glob("*.yaml"))


def stage_documents(pod_run_seconds: float) -> list[dict[str, Any]]:
    """Our kwok Stage objects, with the default pod run time set from the config."""
    docs: list[dict[str, Any]] = []
    run_ms = round(pod_run_seconds * 1000)
    for path in stage_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            if doc.get("kind") != "Stage":
                raise ClusterError(f"{path}: expected kind Stage, found {doc.get('kind')!r}")
            name = doc["metadata"]["name"]
            if name in ("pod-complete", "pod-complete-bare", "pod-fail"):
                doc["spec"].setdefault("delay", {})["durationMilliseconds"] = run_ms
            docs.append(doc)
    return docs


def node_objects(pools: tuple[NodePool, ...], kubelet_version: str = KUBERNETES_VERSION) -> list[dict[str, Any]]:
    """The Node objects (with status) for every pool, from templates/node.yaml."""
    template = yaml.safe_load(NODE_TEMPLATE.read_text())
    nodes = []
    for pool in pools:
        for name in pool.node_names():
            node = copy.deepcopy(template)
            node["metadata"]["name"] = name
            labels = node["metadata"]["labels"]
            labels["kubernetes.io/hostname"] = name
            labels["dlcharts.io/node-pool"] = pool.name
            if pool.gpus:
                labels["nvidia.com/gpu.count"] = str(pool.gpus)
            labels.update(pool.labels)
            if pool.taints:
                node["spec"]["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]
            resources = {
                "cpu": pool.cpu,
                "memory": pool.memory,
                "pods": str(pool.pods),
                "ephemeral-storage": pool.ephemeral_storage,
            }
            if pool.gpus:
                resources[pool.gpu_resource] = str(pool.gpus)
            node["status"]["capacity"] = dict(resources)
            node["status"]["allocatable"] = dict(resources)
            node["status"]["nodeInfo"]["kubeletVersion"] = kubelet_version
            nodes.append(node)
    return nodes
