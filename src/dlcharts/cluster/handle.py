"""What a caller holds of a cluster: :class:`ClusterAccess` (any cluster, by kubeconfig) and :class:`ClusterHandle` (a
running embedded cluster, as ``EmbeddedCluster.start()`` returns it)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any

from dlcharts.cluster.kubeapi import api
from dlcharts.cluster.kwokctl import component_pids
from dlcharts.cluster.node import RealNode
from dlcharts.cluster.node_registry import NodeImages
from dlcharts.errors import ClusterError
from dlcharts.host import procs
from dlcharts.waiting import poll


@dataclasses.dataclass
class ClusterAccess:
    """Any reachable cluster, by kubeconfig: what tests and the CLI need, whatever the provider."""

    name: str
    kubeconfig: Path

    def env(self) -> dict[str, str]:
        """os.environ with KUBECONFIG pointing at this cluster (for helm/kubectl subprocesses)."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig)}

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this cluster."""
        return api(self.kubeconfig)

    def create_namespace(self, name: str, level: str = "restricted", timeout: float = 60) -> None:
        """Create a namespace enforcing Pod Security ``level`` and wait until pods can be created in it."""
        from dlcharts.install.kube import Kube
        from dlcharts.install.namespaces import create_namespace

        with Kube.from_kubeconfig(self.kubeconfig) as kube:
            create_namespace(kube, name, level, timeout)

    def delete_namespace(self, name: str, wait: bool = True, timeout: float = 120) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        with contextlib.closing(self.api_client()) as api:
            core: Any = client.CoreV1Api(api)
            try:
                core.delete_namespace(name)
            except ApiException as exc:
                if exc.status == 404:
                    return
                raise

            def gone() -> bool:
                try:
                    core.read_namespace(name)
                except ApiException as exc:
                    if exc.status == 404:
                        return True
                    raise
                return False

            if wait:
                poll(gone, timeout, f"namespace {name} to be deleted")


@dataclasses.dataclass
class ClusterHandle(ClusterAccess):
    """A running embedded cluster: point helm/kubectl at ``kubeconfig``."""

    server: str
    state_dir: Path
    reused: bool
    start_seconds: float
    #: the first real node's name, address, bridge, images and versions (None without one; dlcharts.cluster.node)
    real_node: dict[str, Any] | None = None
    #: every real node's, real-0 first (empty without one)
    real_nodes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the add-ons that run (dlcharts.cluster.addons): name -> version, pid, log
    addons: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

    def pids(self) -> dict[str, int]:
        """The control plane's processes (kwokctl's pid files) and its add-ons' (dlcharts.cluster.addons)."""
        return {**component_pids(self.state_dir), **procs.pids(self.state_dir / "addons" / "pids")}

    @property
    def images(self) -> NodeImages | None:
        """The real node's images in the cluster's registry: ``images.busybox`` is
        ``127.0.0.1:<port>/busybox:1.37.0`` (None without a real node)."""
        if not self.real_node:
            return None
        recorded = self.real_node.get("images") or {}
        try:
            return NodeImages(**recorded)
        except TypeError:
            raise ClusterError(
                f"cluster {self.name} was started by an older dlcharts (its images are {recorded}); restart it: "
                f"`dlcharts cluster down --name {self.name}` then `up`"
            ) from None

    def node_pids(self, index: int = 0) -> dict[str, int]:
        """A real node's processes: containerd, kubelet, coredns, kube-router (empty without that node)."""
        return RealNode(self.state_dir, self.name, index=index).pids()

    def rss_bytes(self) -> dict[str, int]:
        """Resident memory of each control-plane process (from /proc)."""
        return {name: _rss(pid) for name, pid in self.pids().items()}


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
