"""`dlcharts validate --server`, the reference mode: every rendered object also goes to a throwaway embedded API
server of the render's Kubernetes version (dlcharts.cluster.server_check.ServerCheck), a dry-run create with strict
field validation; its refusals are `api-server` findings beside the offline ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dlcharts.cli import main
from dlcharts.cluster import ClusterConfig, EmbeddedCluster
from dlcharts.cluster.server_check import server_cluster_name
from dlcharts.host.binaries import CLUSTER_VERSIONS, OLDEST_KUBERNETES_VERSION

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module", autouse=True)
def no_throwaway_left() -> Iterator[None]:
    yield
    for name in map(server_cluster_name, CLUSTER_VERSIONS):
        assert not EmbeddedCluster(ClusterConfig(name=name)).is_running(), f"{name} was left running"


def validate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["validate", *argv, "--server", "--no-cache"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("kube_version", ["1.35.0", OLDEST_KUBERNETES_VERSION.lstrip("v")])
def test_every_scenario_passes_the_api_server_of_each_version(capsys, kube_version: str) -> None:
    code, out = validate(capsys, "charts", "--kube-version", kube_version)
    assert code == 0, out
    assert "0 failed" in out and f"Kubernetes {kube_version}" in out, out
    assert "not sent to the API server (it has no CRD for them" in out and "PodGroup" in out, out


def test_the_server_refuses_what_its_minor_refuses(capsys) -> None:
    env = ("--set", "defaults.env[0].name=1 epoch", "--set", "defaults.env[0].value=x")
    code, out = validate(capsys, "charts/tensorflow-dist", *env, "--kube-version", "1.29.0")
    assert code == 1 and "[api-server] (k8s 1.29.0)" in out and 'Invalid value: "1 epoch"' in out, out
    code, out = validate(capsys, "charts/tensorflow-dist", *env, "--kube-version", "1.35.0")
    assert code == 0, out  # 1.32 relaxed environment variable names


def test_a_version_without_an_api_server_is_a_usage_error(capsys) -> None:
    code, out = validate(capsys, "charts/tensorflow-dist", "--kube-version", "1.31.0")
    assert code == 2 and "no API server of Kubernetes 1.31 here" in out and "--kube-version 1.29.0" in out, out
