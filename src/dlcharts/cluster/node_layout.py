"""Where a real node's parts live: its name, its network and its folders, shared by its components.

A cluster has 1 to :data:`MAX_REAL_NODES` real nodes, ``real-0``, ``real-1``, ...; each is a host of its own on this
machine (its own pods' network namespace, bridge, pod range, containerd, kubelet, CoreDNS, kube-router, cgroup,
image store and logs). The cluster's range (``ClusterConfig.real_node_cidr``, or a /24 derived from the cluster's
name) is cut in :data:`MAX_REAL_NODES` equal parts, one per node: ``real-<i>`` gets part ``i``, and the first
address of its part is its node address.

Everything ``real-0`` owns lives under ``<cluster>/node/`` (``<cluster>`` is ``$DLCHARTS_CACHE/clusters/<name>``),
``real-<i>``'s under ``<cluster>/node-<i>/``:

    node.json                  what ``start()`` recorded: network, versions, host directories it made
    containerd/config.toml, state/, containerd.sock          containerd with its own config, never the
                                                             system's /etc/containerd or /var/lib/containerd;
                                                             its root is the image store below
    containerd/certs.d/127.0.0.1:<port>/hosts.toml           plain HTTP to the cluster's registry
    runc/                      runc's state (the runc shim's ``Root``)
    kubelet/                   kubelet --root-dir (pod volumes are mounted here), config, kubeconfig, cert
    pod-logs/                  container logs (kubelet ``podLogsDir``)
    cni/net.d/, cni/ipam/      the CNI network config and host-local's address leases
    cni/bin/                   the plugins containerd runs: ``bridge`` enters the pods' network namespace first
    pods.netns                 the pods' network namespace (a mount of its nsfs file)
    netpol/bin/                kube-router's iptables and ipset, entering that namespace (dlcharts.cluster.netpol)
    pids/                      containerd.pid, kubelet.pid, coredns.pid, kube-router.pid
and logs in ``<cluster>/logs/{containerd,kubelet,coredns,kube-router}.log`` beside the control plane's (``real-<i>``'s
in ``<cluster>/logs/real-<i>/``).

The node's image store, containerd's root (content, unpacked image snapshots, metadata), is
``$DLCHARTS_CACHE/node-images/<name>`` (``real-<i>``'s: ``<name>.real-<i>``; a cluster name has no dot), outside the
cluster's folder: it stays when the cluster stops, so the next node of that name starts with the images it had.
Containers are removed from it when the node stops; delete the folder to reclaim the space.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import ipaddress
import json
from pathlib import Path
from typing import Any

from dlcharts.host import procs

STATE_FILE = "node.json"
#: real nodes a cluster can have: its range is cut in this many parts
MAX_REAL_NODES = 4
#: the range's prefix length at most (each node's part is then at least a /28)
LONGEST_RANGE_PREFIX = 26


def default_cidr(cluster: str) -> str:
    """A /24 per cluster name, out of 10.250.0.0/16 (two clusters on one machine rarely share one; start()
    refuses a range already on an interface)."""
    return f"10.250.{hashlib.sha256(cluster.encode()).digest()[0]}.0/24"


def node_name(index: int) -> str:
    return f"real-{index}"


@dataclasses.dataclass(frozen=True)
class Network:
    bridge: str
    #: this node's part of the cluster's range
    subnet: str
    #: the cluster's range: every real node's pods (pods route it through their node)
    cluster_range: str

    @property
    def node_ip(self) -> str:
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    @classmethod
    def for_node(cls, cluster: str, cidr: str, index: int) -> Network:
        owner = cluster if index == 0 else f"{cluster}/{node_name(index)}"
        bridge = "dlc-" + hashlib.sha256(owner.encode()).hexdigest()[:10]  # at most 15 characters
        cluster_range = ipaddress.ip_network(cidr or default_cidr(cluster))
        parts = list(cluster_range.subnets(prefixlen_diff=MAX_REAL_NODES.bit_length() - 1))
        return cls(bridge=bridge, subnet=str(parts[index]), cluster_range=str(cluster_range))


@dataclasses.dataclass(frozen=True)
class NodeLayout:
    """The real node ``real-<index>`` of the cluster ``cluster`` whose state directory is ``state_dir``."""

    state_dir: Path
    cluster: str
    cache: Path
    network: Network
    index: int = 0

    @classmethod
    def of(cls, state_dir: Path, cluster: str, cidr: str, cache: Path, index: int = 0) -> NodeLayout:
        """The layout of that cluster's node ``real-<index>``; the network it recorded when it started, if it did."""
        layout = cls(state_dir, cluster, cache, Network.for_node(cluster, cidr, index), index)
        with contextlib.suppress(KeyError, TypeError):
            doc = layout.recorded()
            recorded = Network(bridge=doc["bridge"], subnet=doc["subnet"], cluster_range=doc["cluster_range"])
            return dataclasses.replace(layout, network=recorded)
        return layout

    @classmethod
    def indexes_on_disk(cls, state_dir: Path) -> list[int]:
        """The indexes of the nodes that have a folder under ``state_dir`` (what a stop must clean up)."""
        found = [0] if (state_dir / "node").is_dir() else []
        for path in state_dir.glob("node-*"):
            if path.is_dir() and path.name.removeprefix("node-").isdigit():
                found.append(int(path.name.removeprefix("node-")))
        return sorted(found)

    @property
    def name(self) -> str:
        return node_name(self.index)

    @property
    def dir(self) -> Path:
        return self.state_dir / ("node" if self.index == 0 else f"node-{self.index}")

    @property
    def logs_dir(self) -> Path:
        logs = self.state_dir / "logs"
        return logs if self.index == 0 else logs / self.name

    @property
    def pid_dir(self) -> Path:
        return self.dir / "pids"

    @property
    def socket(self) -> Path:
        """containerd's socket."""
        return self.dir / "containerd" / "containerd.sock"

    @property
    def netns(self) -> Path:
        """The pods' network namespace (a mounted nsfs file)."""
        return self.dir / "pods.netns"

    @property
    def cgroup_name(self) -> str:
        return f"dlcharts-{self.cluster}" + ("" if self.index == 0 else f"-{self.name}")

    @property
    def image_store(self) -> Path:
        """containerd's root, kept when the cluster stops."""
        return self.cache / "node-images" / (self.cluster if self.index == 0 else f"{self.cluster}.{self.name}")

    @property
    def state_file(self) -> Path:
        return self.dir / STATE_FILE

    def pids(self) -> dict[str, int]:
        return procs.pids(self.pid_dir)

    def recorded(self) -> dict[str, Any]:
        """What ``start()`` wrote to ``node.json`` (empty when there is none, or it cannot be read)."""
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads(self.state_file.read_text())
            if isinstance(doc, dict):
                return doc
        return {}
