"""The real nodes real-0, real-1, ... (:class:`dlcharts.cluster.node.RealNode`: containerd, kubelet, CoreDNS and
kube-router each, routed to each other, and the cluster's own registry their images are pulled from), one unless
``ClusterConfig.real_nodes`` asks for more, none when ``ClusterConfig.real_node`` is off. They stop before the
control plane: their pods' mounts and network live under the state directory kwokctl removes."""

from __future__ import annotations

from typing import Any

from dlcharts.cluster.node import RealNode
from dlcharts.cluster.node_registry import registry_for
from dlcharts.cluster.steps import StepContext
from dlcharts.errors import ClusterError
from dlcharts.host import procs


def nodes(ctx: StepContext, count: int = 0) -> list[RealNode]:
    """The real nodes real-0 .. real-<count - 1>, and every other one with a folder on disk."""
    config = ctx.config
    return RealNode.all_of(ctx.layout.state_dir, config.name, count, config.real_node_cidr, ctx.layout.cache)


def start(ctx: StepContext) -> None:
    """Start the real nodes on a new cluster, one after the other; on a reused one, check that they still run."""
    if not ctx.config.real_node:
        ctx.real_nodes = []
    elif not ctx.reused:
        timeout = ctx.config.start_timeout
        ctx.real_nodes = [node.start(ctx.layout.kubeconfig, timeout) for node in nodes(ctx, ctx.config.real_node_count)]
    else:
        ctx.real_nodes = _running(ctx)


def _running(ctx: StepContext) -> list[dict[str, Any]]:
    name = ctx.config.name
    doc = ctx.layout.recorded()
    recorded = doc.get("real_nodes") or ([doc["real_node"]] if doc.get("real_node") else [])
    wanted = ctx.config.real_nodes
    if wanted is not None and wanted != len(recorded):
        raise ClusterError(
            f"cluster {name} runs with {len(recorded)} real node(s), not {wanted}; stop it first "
            f"(`dlcharts cluster down --name {name}`) or use another cluster name"
        )
    dead = []
    for node in nodes(ctx, len(recorded)):
        pids = node.pids()
        parts = ("containerd", "kubelet", "coredns", "kube-router")
        dead += [f"{node.name} {n}" for n in parts if not procs.alive(pids.get(n, 0))]
    if not registry_for(name, ctx.layout.cache).status().running:
        dead.append("registry")
    if dead:
        raise ClusterError(
            f"cluster {name} runs, but these parts of its real nodes do not: {', '.join(dead)}; "
            f"restart it: `dlcharts cluster down --name {name}` then `up` "
            f"(logs in {ctx.layout.logs_dir})"
        )
    return [n for n in recorded if isinstance(n, dict)]


def stop(ctx: StepContext) -> None:
    for node in reversed(nodes(ctx)):
        node.stop(ctx.layout.kubeconfig)
