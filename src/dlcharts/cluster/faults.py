"""Faults of the embedded cluster's real nodes, as they happen to hosts: what a chart does when a node is lost or
cut off is then something to run and measure, not to guess (``dlcharts cluster fault``).

``lose``     the host is gone: the traffic between its pods and the other nodes is dropped first, then every
             process of the node is killed at once (kubelet, containerd, CoreDNS, kube-router, the containers'
             shims and the containers). Nothing says goodbye (no FIN, no RST reaches a peer), as when a host loses
             power: peers see silence. The API server stops hearing from the kubelet, so the node lifecycle
             controller marks the node NotReady after its grace period and taints it, and its pods are evicted
             once their toleration of that taint runs out; they stay Terminating, since no kubelet confirms.
``restore``  what ``lose`` left is cleaned up and the node starts again under its name (a rebooted host): its
             kubelet registers, confirms the deletion of its old pods and takes new ones.
``isolate``  the traffic between the node's pods and the other nodes' pods is dropped, in both directions (a
             partition); its kubelet keeps reporting and its pods still reach it and its CoreDNS.
``rejoin``   undo ``isolate``.

The node's state stays in the cluster's state file: a lost node is still one of the cluster's nodes, and ``cluster
down`` cleans it up as any other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dlcharts.cluster import containerd, network
from dlcharts.cluster.node import RealNode
from dlcharts.errors import ClusterError
from dlcharts.host import procs

ACTIONS = ("lose", "restore", "isolate", "rejoin")


def real_node(state_dir: Path, cluster: str, name: str) -> RealNode:
    """The running cluster's real node ``name`` (real-<i>), or a ClusterError naming the ones it has."""
    state = state_dir / "dlcharts-cluster.json"
    doc: dict[str, Any] = json.loads(state.read_text()) if state.is_file() else {}
    names = [n["name"] for n in doc.get("real_nodes") or []]
    if name not in names:
        have = ", ".join(names) or "none"
        raise ClusterError(f"cluster {cluster} has no real node {name!r} (it has: {have})")
    return RealNode(state_dir, cluster, index=names.index(name))


def lose(node: RealNode) -> None:
    """Cut the node's pods off, then kill every process of the node at once."""
    network.isolate(node.layout.network)
    layout = node.layout
    shims = {p for p in procs.all_pids() if containerd.is_shim_of(layout, p)}
    procs.kill(set(layout.pids().values()) | shims | procs.children(shims))


def restore(node: RealNode, kubeconfig: Path, timeout: float) -> dict[str, Any]:
    """Clean up what is left of the node (after :func:`lose`, or of a node that died) and start it again; return
    what it records. Its old pods are the new kubelet's to finish."""
    node.stop()  # no kubeconfig: nothing to drain, the pods are the new kubelet's to confirm
    return node.start(kubeconfig, timeout)


def isolate(node: RealNode) -> None:
    network.isolate(node.layout.network)


def rejoin(node: RealNode) -> None:
    network.rejoin(node.layout.network)
