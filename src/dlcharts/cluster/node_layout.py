"""Where the real node's parts live: its name, its network and its folders, shared by its components.

Everything the node owns lives under ``<cluster>/node/`` (``<cluster>`` is ``$DLCHARTS_CACHE/clusters/<name>``):

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
and logs in ``<cluster>/logs/{containerd,kubelet,coredns,kube-router}.log`` beside the control plane's.

The node's image store, containerd's root (content, unpacked image snapshots, metadata), is
``$DLCHARTS_CACHE/node-images/<name>``, outside the cluster's folder: it stays when the cluster stops, so the next
node of that name starts with the images it had. Containers are removed from it when the node stops; delete the
folder to reclaim the space.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import ipaddress
import json
from pathlib import Path
from typing import Any

from dlcharts.cluster import procs

STATE_FILE = "node.json"


def default_cidr(cluster: str) -> str:
    """A /24 per cluster name, out of 10.250.0.0/16 (two clusters on one machine rarely share one; start()
    refuses a range already on an interface)."""
    return f"10.250.{hashlib.sha256(cluster.encode()).digest()[0]}.0/24"


@dataclasses.dataclass(frozen=True)
class Network:
    bridge: str
    subnet: str

    @property
    def node_ip(self) -> str:
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    @classmethod
    def for_cluster(cls, cluster: str, cidr: str) -> Network:
        bridge = "dlc-" + hashlib.sha256(cluster.encode()).hexdigest()[:10]  # at most 15 characters
        return cls(bridge=bridge, subnet=cidr or default_cidr(cluster))


@dataclasses.dataclass(frozen=True)
class NodeLayout:
    """The real node of the cluster ``cluster`` whose state directory is ``state_dir``."""

    state_dir: Path
    cluster: str
    cache: Path
    network: Network

    @classmethod
    def of(cls, state_dir: Path, cluster: str, cidr: str, cache: Path) -> NodeLayout:
        """The layout of that cluster's node; the network it recorded when it started, if it did."""
        layout = cls(state_dir, cluster, cache, Network.for_cluster(cluster, cidr))
        with contextlib.suppress(KeyError, TypeError):
            doc = layout.recorded()
            return dataclasses.replace(layout, network=Network(bridge=doc["bridge"], subnet=doc["subnet"]))
        return layout

    @property
    def dir(self) -> Path:
        return self.state_dir / "node"

    @property
    def logs_dir(self) -> Path:
        return self.state_dir / "logs"

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
        return f"dlcharts-{self.cluster}"

    @property
    def image_store(self) -> Path:
        """containerd's root, kept when the cluster stops."""
        return self.cache / "node-images" / self.cluster

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
