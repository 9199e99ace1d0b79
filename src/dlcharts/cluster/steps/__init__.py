"""Start steps, as kind creates a cluster with its actions: each step one component, with its own start, stop and
clean-up. The embedded cluster (:meth:`dlcharts.cluster.embedded.EmbeddedCluster.steps`) and each of its real nodes
(:meth:`dlcharts.cluster.node.RealNode.steps`) start theirs in order; they stop them, then clean them up, in reverse.

The embedded cluster's steps, each a module here with ``start(ctx)`` (and ``stop(ctx)``, ``clean_up(ctx)``), share
a :class:`StepContext`, as kind's actions share their ActionContext:

    control-plane   kwokctl: certificates, etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the kwok
                    controller; then /readyz, the leader leases, the default ServiceAccount   (.control_plane)
    fake-nodes      the fake GPU and CPU nodes (kwok's), Ready                                 (.fake_nodes)
    real-nodes      real-0, real-1, ...: each one's own steps (dlcharts.cluster.node), among them cluster DNS and
                    the cluster's registry                                                     (.real_nodes)
    add-ons         Kueue, coscheduling, the training operators (dlcharts.cluster.addons)     (.addons)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlcharts.cluster.cluster_layout import ClusterLayout
from dlcharts.cluster.config import ClusterConfig


def _nothing() -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Step:
    """One component: started in order; stopped, then cleaned up, in reverse order."""

    name: str
    start: Callable[[], object]
    stop: Callable[[], object] = _nothing
    clean_up: Callable[[], object] = _nothing


@dataclasses.dataclass
class StepContext:
    """What the embedded cluster's steps share: its config and folders, whether it ran already (then each step
    checks or completes what runs), the binaries by name; and what the steps started, for the cluster's state file
    and its handle. A stop works from the config and the folders alone."""

    config: ClusterConfig
    layout: ClusterLayout
    reused: bool = False
    binaries: dict[str, Path] = dataclasses.field(default_factory=dict)
    #: the API server's address (control-plane)
    server: str = ""
    #: what each real node's start returned, real-0 first (real-nodes)
    real_nodes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: the add-ons that run: name -> version, pid, log (add-ons)
    addons: dict[str, Any] = dataclasses.field(default_factory=dict)
