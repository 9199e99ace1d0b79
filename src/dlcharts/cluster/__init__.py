"""The embedded cluster tier: a real control plane on 127.0.0.1 with fake GPU nodes (kwok).

    from dlcharts.cluster import ClusterConfig, EmbeddedCluster, NodePool

    with EmbeddedCluster(ClusterConfig(name="dev")) as cluster:
        print(cluster.kubeconfig)          # point helm / kubectl here

Binaries (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok, kwokctl, and kubelet and
coredns for the real node) are built
from Go modules by ``dlcharts cluster build`` (or :func:`build_binaries`) into
``$DLCHARTS_CACHE/bin``; a missing one raises ClusterError naming it and the build command.
"""

from dlcharts.cluster.config import H100_LABELS, ClusterConfig, NodePool, Taint, default_node_pools
from dlcharts.cluster.embedded import ClusterAccess, ClusterHandle, EmbeddedCluster
from dlcharts.host.binaries import (
    BINARY_NAMES,
    ETCD_VERSION,
    KUBERNETES_VERSION,
    KWOK_VERSION,
    build_binaries,
    pinned_binaries,
    require_binaries,
)
from dlcharts.waiting import poll

__all__ = [
    "ClusterAccess",
    "BINARY_NAMES",
    "ETCD_VERSION",
    "H100_LABELS",
    "KUBERNETES_VERSION",
    "KWOK_VERSION",
    "ClusterConfig",
    "ClusterHandle",
    "EmbeddedCluster",
    "NodePool",
    "Taint",
    "pinned_binaries",
    "build_binaries",
    "default_node_pools",
    "poll",
    "require_binaries",
]
