"""What ``kwokctl create cluster`` is given: the control plane's configuration, component by component.

One KwokctlConfiguration (the binary runtime on 127.0.0.1, with certificates, authorization and admission; our
locally built binaries, so nothing is downloaded; each component's extra flags), kwok's KwokConfiguration, and our
pod stages (:func:`dlcharts.cluster.config.stage_documents`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlcharts.cluster.config import ClusterConfig, stage_documents
from dlcharts.host import binaries as _bin

# kwok plays each pod's stages (Pending -> Running -> Succeeded) with this many workers; its default of 4 moved
# about 10 pods/s to Running on 2 busy cores, so a 5,000-worker job took minutes to run after it was bound.
KWOK_POD_PARALLELISM = 32


def documents(config: ClusterConfig, cache: Path, state_dir: Path, paths: dict[str, Path]) -> list[dict[str, Any]]:
    """kwokctl's configuration file, as documents: ``paths`` are the binaries by name (kubectl among them)."""
    ctl = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": _options(config, cache, paths),
        # A KwokConfiguration document would replace (not merge with) kwok's defaults, so the one
        # kwok option we change goes in as a flag.
        "componentsPatches": [
            {"name": "kwok-controller", "extraArgs": _kwok_controller_args(config)},
            {
                # kubectl logs/exec on the real node: the API server authenticates to the kubelet with the
                # cluster's admin certificate and checks the kubelet's serving certificate against the CA.
                "name": "kube-apiserver",
                "extraArgs": _kube_apiserver_args(state_dir),
            },
            {"name": "kube-controller-manager", "extraArgs": _controller_manager_args(config)},
            {"name": "kube-scheduler", "extraArgs": _api_rate_args(config)},
        ],
    }
    return [ctl, kwok_configuration(), *stage_documents(config.pod_run_seconds)]


def _options(config: ClusterConfig, cache: Path, paths: dict[str, Path]) -> dict[str, Any]:
    return {
        "runtime": "binary",
        "kubeVersion": config.kubernetes_version,
        "kwokVersion": _bin.KWOK_VERSION,
        "etcdVersion": _bin.ETCD_VERSION.lstrip("v"),
        "bindAddress": "127.0.0.1",
        "securePort": True,
        "kubeAuthorization": True,
        "kubeAdmission": True,
        "quietPull": True,
        "cacheDir": str(cache / "kwok-cache"),
        "kubeApiserverBinary": str(paths["kube-apiserver"]),
        "kubeControllerManagerBinary": str(paths["kube-controller-manager"]),
        "kubeSchedulerBinary": str(paths["kube-scheduler"]),
        "kwokControllerBinary": str(paths["kwok"]),
        "etcdBinary": str(paths["etcd"]),
        "kubectlBinary": str(paths["kubectl"]),
        "nodeLeaseDurationSeconds": 40,
    }


def _kwok_controller_args(config: ClusterConfig) -> list[dict[str, str]]:
    return [
        {"key": "cidr", "value": config.pod_cidr},
        # kwokctl's binary runtime has kwok manage every node; it must leave the real node
        # (and its pods) to the kubelet. Our fake nodes carry this annotation (node.yaml).
        {"key": "manage-all-nodes", "value": "false"},
        {"key": "manage-nodes-with-annotation-selector", "value": "kwok.x-k8s.io/node=fake"},
    ]


def _kube_apiserver_args(state_dir: Path) -> list[dict[str, str]]:
    return [
        {"key": "kubelet-client-certificate", "value": str(state_dir / "pki" / "admin.crt")},
        {"key": "kubelet-client-key", "value": str(state_dir / "pki" / "admin.key")},
        {"key": "kubelet-certificate-authority", "value": str(state_dir / "pki" / "ca.crt")},
        # the real node's Hostname address (real-0) resolves nowhere; its InternalIP does
        {"key": "kubelet-preferred-address-types", "value": "InternalIP,Hostname"},
    ]


def _controller_manager_args(config: ClusterConfig) -> list[dict[str, str]]:
    return [
        *_api_rate_args(config),
        # Each pod's start changed its Service's EndpointSlices and Endpoints once more: at 5,000
        # pods that churn held the API server. Batched per second, as large clusters run it.
        {"key": "endpointslice-updates-batch-period", "value": "1s"},
        {"key": "endpoint-updates-batch-period", "value": "1s"},
        *_node_monitor_args(config),
    ]


def _node_monitor_args(config: ClusterConfig) -> list[dict[str, str]]:
    """With several real nodes (where node faults are tested), a node that stops reporting is NotReady after
    Kubernetes' own defaults (5s, 50s), as on a production cluster. Other clusters keep kwokctl's 25s / 3m20s:
    with 50s, the fake nodes of a busy cluster went NotReady in the chart tier (their heartbeats come from kwok)."""
    if config.real_node_count < 2:
        return []
    return [{"key": "node-monitor-period", "value": "5s"}, {"key": "node-monitor-grace-period", "value": "50s"}]


def _api_rate_args(config: ClusterConfig) -> list[dict[str, str]]:
    return [
        {"key": "kube-api-qps", "value": str(config.api_qps)},
        {"key": "kube-api-burst", "value": str(2 * config.api_qps)},
    ]


def kwok_configuration() -> dict[str, Any]:
    """kwok-controller's KwokConfiguration. kwok reads this document as it is, without filling in its defaults,
    so every option keeps kwok v0.8.0's default spelled out here except the pod stage parallelism."""
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageAllNodes": False,
            "enableDebuggingHandlers": True,
            "enableContentionProfiling": False,
            "enableProfilingHandler": True,
            "podPlayStageParallelism": KWOK_POD_PARALLELISM,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 1,
            "enablePodsOnNodeSyncListPager": True,
            "enablePodsOnNodeSyncStreamWatch": False,
        },
    }
