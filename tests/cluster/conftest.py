"""Fixtures for the embedded cluster's own tests.

`embedded_cluster` starts the cluster once per session (or reuses one already running under the
same name, e.g. after `dlcharts cluster up`) and stops it afterwards only if it started it.
Set DLCHARTS_CLUSTER_NAME to use another cluster name. Missing binaries are an error, not a skip.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from dlcharts.cluster import ClusterConfig, ClusterHandle, EmbeddedCluster


@pytest.fixture(scope="session")
def embedded_cluster() -> Iterator[ClusterHandle]:
    config = ClusterConfig(name=os.environ.get("DLCHARTS_CLUSTER_NAME", "dlcharts"))
    with EmbeddedCluster(config) as handle:
        yield handle


@pytest.fixture(scope="session")
def api(embedded_cluster: ClusterHandle) -> Iterator[Any]:
    with contextlib.closing(embedded_cluster.api_client()) as client:
        yield client


@pytest.fixture
def namespace(embedded_cluster: ClusterHandle) -> Iterator[str]:
    """A fresh namespace enforcing Pod Security `restricted`, deleted (without waiting) afterwards."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    embedded_cluster.create_namespace(name, "restricted")
    yield name
    embedded_cluster.delete_namespace(name, wait=False)


# ----- the chart tier (test_charts.py, test_behaviour.py) ---------------------------------------------------
# These use the dlcharts plugin's `cluster` fixture (embedded by default; --dlcharts-cluster to change).


@pytest.fixture(scope="session")
def kube(cluster: Any) -> Iterator[Any]:
    """A raw-JSON client (dlcharts.install.kube.Kube) for the session's cluster, used by one session at a time
    (cluster_env.exclusive_use: concurrent sessions would take each other's GPUs)."""
    import cluster_env

    from dlcharts.install.kube import Kube

    with cluster_env.exclusive_use(cluster.kubeconfig), Kube.from_kubeconfig(cluster.kubeconfig) as client:
        yield client


@pytest.fixture(scope="session")
def chart_cluster(cluster: Any, kube: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's cluster with what the chart scenarios need beyond its defaults (see cluster_env.py):
    CRDs built from src/dlcharts/crds/ (left installed, see cluster_env.ensure_crds), the stand-in gang
    scheduler, and the PriorityClass and RuntimeClass the scenarios name (cluster_env.SCENARIO_CLASSES; both
    removed at the end of the session).

    On a cluster that is not kwok-based (--dlcharts-cluster kubeconfig pointing at real nodes) only the
    classes are added: CRDs and gang schedulers are that cluster's own business there."""
    import cluster_env

    workdir = tmp_path_factory.mktemp("chart-cluster")
    with contextlib.ExitStack() as stack:
        if cluster_env.is_kwok_cluster(kube):
            cluster_env.ensure_crds(kube, cluster_env.all_crds())
            stack.enter_context(cluster_env.stand_in_scheduler(cluster.kubeconfig, workdir))
        stack.enter_context(cluster_env.scenario_classes(kube))
        yield cluster
