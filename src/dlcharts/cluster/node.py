"""A real node of the embedded cluster (containers really run on this machine), started as kind creates a
cluster: an ordered list of steps, each a component with its own start, stop and clean-up. A cluster has one to
four, ``real-0`` to ``real-3``, each a host of its own (:mod:`dlcharts.cluster.node_layout`), started in order
and stopped in reverse (``real-0`` owns the cluster's registry, which every node pulls from).

    record        node.json: the network, the versions, the host folders it makes  (dlcharts.cluster.node_record)
    network       the pods' namespace, bridge, veth pair, routes, CNI config       (dlcharts.cluster.network)
    cgroups       the kubelet's cgroupRoot /dlcharts-<name>                         (dlcharts.cluster.cgroups)
    images        the cluster's registry on 127.0.0.1 and the nodes' images (dlcharts.cluster.node_registry)
    containerd    containerd and runc, with the node's image store               (dlcharts.cluster.containerd)
    coredns       cluster DNS on the node's address                                     (dlcharts.cluster.dns)
    kubelet       the node ``real-<i>``, registered and Ready                       (dlcharts.cluster.kubelet)
    kube-router   NetworkPolicies, enforced in the pods' namespace                   (dlcharts.cluster.netpol)

:meth:`RealNode.start` checks the machine first (root, the host's tools, the built binaries, the network range),
then starts the steps in that order. :meth:`RealNode.stop` stops them in reverse (the processes), then cleans them
up in reverse (mounts, links, cgroups, the namespace with its rules and sets, host folders). It leaves no process
(the registry included), mount, network namespace, veth, bridge, cgroup or pid file behind, and works from what
is on disk, so it also cleans up after a crash; the registry's storage and the image store stay for the next
start. Where everything lives: :mod:`dlcharts.cluster.node_layout`. What ``start`` returns is the cluster state
file's ``real_node``: the node's name, address, bridge and subnet, its images' references and digests, and the
versions it runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dlcharts.cluster import cgroups, containerd, dns, kubelet, netpol, network, node_record, node_registry
from dlcharts.cluster.kubelet import LABEL_KEY, LABEL_VALUE, NODE_NAME, NODE_SELECTOR, TOLERATION
from dlcharts.cluster.node_layout import MAX_REAL_NODES, Network, NodeLayout, node_name
from dlcharts.cluster.steps import Step
from dlcharts.errors import ClusterError
from dlcharts.host import binaries as _bin
from dlcharts.host import preflight
from dlcharts.toolchain import cache_root

__all__ = [
    "MAX_REAL_NODES",
    "LABEL_KEY",
    "LABEL_VALUE",
    "NODE_NAME",
    "NODE_SELECTOR",
    "TOLERATION",
    "Network",
    "node_name",
    "RealNode",
    "Step",
]


class RealNode:
    """The real node ``real-<index>`` of the cluster whose state directory is ``state_dir``."""

    def __init__(
        self, state_dir: Path, cluster: str, cidr: str = "", cache: Path | None = None, index: int = 0
    ) -> None:
        cache = cache if cache is not None else cache_root()
        self.layout = NodeLayout.of(state_dir, cluster, cidr, cache, index)
        self._versions: dict[str, str] = {}
        self._images: node_registry.NodeImages | None = None

    @classmethod
    def all_of(
        cls, state_dir: Path, cluster: str, count: int, cidr: str = "", cache: Path | None = None
    ) -> list[RealNode]:
        """The cluster's nodes ``real-0`` .. ``real-<count - 1>``, and any other whose folder is on disk (a stop
        must find every node that an earlier start made)."""
        indexes = sorted({*range(count), *NodeLayout.indexes_on_disk(state_dir)})
        return [cls(state_dir, cluster, cidr, cache, i) for i in indexes]

    @property
    def name(self) -> str:
        return self.layout.name

    @property
    def logs_dir(self) -> Path:
        return self.layout.logs_dir

    @property
    def netns(self) -> Path:
        """The pods' network namespace (a mounted nsfs file)."""
        return self.layout.netns

    def pids(self) -> dict[str, int]:
        return self.layout.pids()

    def steps(self, kubeconfig: Path | None = None, timeout: float = 0.0) -> list[Step]:
        """The node's components in the order they start. ``kubeconfig`` is the cluster's admin kubeconfig: the
        node needs it to start; to stop, it lets the kubelet's pods be deleted through the API first."""
        node = self.layout

        def admin() -> Path:
            if kubeconfig is None:
                raise ClusterError("the real node starts only with the cluster's admin kubeconfig")
            return kubeconfig

        return [
            Step("record", self._record, clean_up=lambda: node_record.forget(node)),
            Step("network", lambda: network.up(node), clean_up=lambda: network.down(node)),
            Step("cgroups", lambda: cgroups.up(node.cgroup_name), clean_up=lambda: cgroups.down(node.cgroup_name)),
            Step("images", self._pull_images, stop=self._stop_registry),
            Step(
                "containerd",
                lambda: containerd.start(node, self._pulled()),
                stop=lambda: containerd.stop(node),
                clean_up=lambda: containerd.clean_up(node, node_record.made_dirs(node)),
            ),
            Step(
                "coredns",
                lambda: dns.start(node.dir, node.logs_dir, node.network.node_ip, admin(), node.cache),
                stop=lambda: dns.stop(node.dir),
            ),
            Step(
                "kubelet",
                lambda: kubelet.start(node, admin(), timeout),
                stop=lambda: kubelet.stop(node, kubeconfig),
                clean_up=lambda: kubelet.clean_up(
                    node, node_record.made_dirs(node), bool(node.recorded().get("made_device_plugins_dir"))
                ),
            ),
            Step(
                "kube-router",
                lambda: netpol.start(node.dir, node.logs_dir, node.netns, node.name, admin(), node.cache),
                stop=lambda: netpol.stop(node.dir),
            ),
        ]

    # ----- start -----------------------------------------------------------------------------------
    def start(self, kubeconfig: Path, timeout: float) -> dict[str, Any]:
        """Start every step and wait until the node is Ready; return what was started (for the state file)."""
        self._preflight()
        for step in self.steps(kubeconfig, timeout):
            step.start()
        return {
            "name": self.name,
            "ip": self.layout.network.node_ip,
            "bridge": self.layout.network.bridge,
            "subnet": self.layout.network.subnet,
            "cluster_range": self.layout.network.cluster_range,
            "images": self._pulled().as_dict(),
            **self._versions,
        }

    def _preflight(self) -> None:
        if os.geteuid() != 0:
            raise ClusterError(
                "the real node (containerd + kubelet) needs root; run as root or start the cluster without it "
                "(`dlcharts cluster up --no-real-node`, or ClusterConfig(real_node=False))"
            )
        missing = preflight.missing_packages()  # the tools in host-packages.txt, the CNI plugins among them
        if missing:
            raise ClusterError(
                f"the real node needs the Debian packages {', '.join(missing)}; install them with "
                f"`apt-get install {' '.join(missing)}` (or start without it: `dlcharts cluster up --no-real-node`)"
            )
        for name in _bin.REAL_NODE_BINARIES:
            if not _bin.binary(name, self.layout.cache).present:
                raise ClusterError(f"the real node needs {name}; build it with {_bin.build_command()} {name}")
        containerd.check(self.layout)
        network.check_free(self.layout.network)

    def _record(self) -> None:
        self._versions = node_record.record(self.layout)

    def _pull_images(self) -> None:
        self._images = node_registry.ensure(self.layout.cluster, self.layout.cache)

    def _stop_registry(self) -> None:
        if self.layout.index == 0:  # the last node to stop: the others pull from it until then
            node_registry.stop(self.layout.cluster, self.layout.cache)

    def _pulled(self) -> node_registry.NodeImages:
        if self._images is None:
            raise ClusterError("the real node's images are not in its registry yet (the images step comes first)")
        return self._images

    # ----- stop ------------------------------------------------------------------------------------
    def stop(self, kubeconfig: Path | None = None) -> None:
        """Stop every step, then clean each up, in reverse order. Safe to call when nothing runs."""
        steps = self.steps(kubeconfig)[::-1]
        for step in steps:
            step.stop()
        for step in steps:
            step.clean_up()
