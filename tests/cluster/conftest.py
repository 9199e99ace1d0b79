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
    embedded_cluster.create_namespace(name, {"pod-security.kubernetes.io/enforce": "restricted"})
    yield name
    embedded_cluster.delete_namespace(name, wait=False)
