"""Fixtures for the embedded cluster's own tests.

`embedded_cluster` starts the cluster once per session (or reuses one already running under the
same name, e.g. after `dlcharts cluster up`) and stops it afterwards only if it started it.
Set DLCHARTS_CLUSTER_NAME to use another cluster name, and DLCHARTS_REAL_NODES for the number of real nodes a new
one starts with (the real-training session of `make test` runs 2, so that every training chart crosses nodes).
Missing binaries are an error, not a skip.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dlcharts.cluster import H100_LABELS, ClusterConfig, ClusterHandle, EmbeddedCluster, NodePool, build_binaries
from dlcharts.cluster.addons import ADDONS
from dlcharts.helm import find_helm
from dlcharts.host.binaries import OLDEST_KUBERNETES_VERSION
from dlcharts.install import Kube, Release
from dlcharts.install.namespaces import delete_namespace
from dlcharts.install.podsecurity import chart_pod_security
from dlcharts.jobs import run
from tests.support import CHARTS


@pytest.fixture(scope="session")
def embedded_cluster() -> Iterator[ClusterHandle]:
    real_nodes = int(os.environ.get("DLCHARTS_REAL_NODES", "0")) or None
    config = ClusterConfig(name=os.environ.get("DLCHARTS_CLUSTER_NAME", "dlcharts"), real_nodes=real_nodes)
    with EmbeddedCluster(config) as handle:
        yield handle


@pytest.fixture(scope="session")
def oldest_cluster() -> Iterator[ClusterHandle]:
    """A second embedded cluster at the oldest Kubernetes minor the charts support (OLDEST_KUBERNETES_VERSION: its
    own API server, controller-manager and scheduler, built here once when missing), fake nodes only."""
    build_binaries(["oldest"])
    name = f"{os.environ.get('DLCHARTS_CLUSTER_NAME', 'dlcharts')}-oldest"
    config = ClusterConfig(name=name, real_node=False, kubernetes_version=OLDEST_KUBERNETES_VERSION)
    with EmbeddedCluster(config) as handle:
        yield handle


@pytest.fixture(scope="session")
def queueing_cluster() -> Iterator[ClusterHandle]:
    """A third embedded cluster with the add-ons Kueue and coscheduling (built here once when missing), fake nodes
    only: 3 nodes of 4 GPUs and one CPU node."""
    build_binaries(["addons"])
    name = f"{os.environ.get('DLCHARTS_CLUSTER_NAME', 'dlcharts')}-queue"
    pools = (NodePool(name="gpu", count=3, gpus=4, labels=dict(H100_LABELS)), NodePool(name="cpu", count=1))
    config = ClusterConfig(name=name, real_node=False, node_pools=pools, addons=ADDONS)
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


# ----- real jobs on the real node (test_real_frameworks.py, test_network_policy.py) ---------------------------


@pytest.fixture
def real_run(embedded_cluster: ClusterHandle) -> Iterator[object]:
    """``real_run(chart, release, *helm_args, on_line=, before=, guarded=)`` -> (RunResult, log text): one job in a
    fresh namespace, deleted at the end; ``before(namespace)`` runs before the install, ``on_line`` on each log line;
    ``guarded``: with the chart's start watch, which reaches the API server through `dlcharts run`'s relay on the
    first real node (run.api_relay), as `dlcharts run` installs it (else without it)."""
    images = embedded_cluster.images
    assert images is not None, "the session's cluster was started without its real node"
    namespaces: list[str] = []

    def go(
        chart: str,
        release: str,
        *helm_args: str,
        on_line: Callable[[str], None] | None = None,
        before: Callable[[str], None] | None = None,
        guarded: bool = False,
    ) -> tuple[run.RunResult, str]:
        path = CHARTS / chart
        namespace = f"{release}-{uuid.uuid4().hex[:6]}"
        embedded_cluster.create_namespace(namespace, chart_pod_security(path).level)
        namespaces.append(namespace)
        go.namespace = namespace  # type: ignore[attr-defined]
        if before is not None:  # given the namespace, before the release is installed
            before(namespace)
        lines: list[str] = []

        def write(line: str) -> None:
            lines.append(line)
            if on_line is not None:
                on_line(line)

        run.push_images(chart, images.registry, lines.append)
        with contextlib.ExitStack() as stack:
            kube = stack.enter_context(Kube.from_kubeconfig(embedded_cluster.kubeconfig))
            api_server = None
            if guarded:
                assert embedded_cluster.real_node is not None
                relay = run.api_relay(
                    embedded_cluster.server, embedded_cluster.state_dir, embedded_cluster.real_node["ip"]
                )
                api_server = stack.enter_context(relay)
            values = run.cpu_values(
                chart, images.registry, spread=len(embedded_cluster.real_nodes) > 1, api_server=api_server
            )
            result = run.run_job(
                kube,
                Release(find_helm(), embedded_cluster.kubeconfig, release, namespace),
                path,
                values,
                helm_args,
                timeout=600,
                write=write,
            )
        log = "\n".join(lines)
        print(log, run.summary(result), result.problem, sep="\n")  # in the report when an assertion fails
        return result, log

    yield go
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        for namespace in namespaces:
            delete_namespace(kube, namespace)


# ----- the chart tier (test_charts.py, test_behaviour.py) ---------------------------------------------------
# These use the dlcharts plugin's `cluster` fixture (embedded by default; --dlcharts-cluster to change).


@pytest.fixture(scope="session")
def kube(cluster: Any) -> Iterator[Any]:
    """A raw-JSON client (dlcharts.install.kube.Kube) for the session's cluster, used by one session at a time
    (cluster_env.exclusive_use: concurrent sessions would take each other's GPUs)."""
    from dlcharts.install.kube import Kube
    from tests.support import cluster as cluster_env

    with cluster_env.exclusive_use(cluster.kubeconfig), Kube.from_kubeconfig(cluster.kubeconfig) as client:
        yield client


@pytest.fixture(scope="session")
def chart_cluster(cluster: Any, kube: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session's cluster with what the chart scenarios need beyond its defaults (see tests/support/cluster.py):
    CRDs built from src/dlcharts/crds/ (left installed, see cluster_env.ensure_crds), the stand-in gang
    scheduler, and the PriorityClass and RuntimeClass the scenarios name (cluster_env.SCENARIO_CLASSES; both
    removed at the end of the session).

    On a cluster that is not kwok-based (--dlcharts-cluster kubeconfig pointing at real nodes) only the
    classes are added: CRDs and gang schedulers are that cluster's own business there."""
    from tests.support import cluster as cluster_env

    workdir = tmp_path_factory.mktemp("chart-cluster")
    with contextlib.ExitStack() as stack:
        if cluster_env.is_kwok_cluster(kube):
            cluster_env.ensure_crds(kube, cluster_env.all_crds())
            stack.enter_context(cluster_env.stand_in_scheduler(cluster.kubeconfig, workdir))
        stack.enter_context(cluster_env.scenario_classes(kube))
        yield cluster
