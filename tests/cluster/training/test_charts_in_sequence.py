"""Every training chart, one after another, with the README's plain command in `dlcharts run`'s default namespace.

This is how a user tries the charts: `dlcharts run charts/<chart> --set worker=2`, one after the other. The
namespace dlcharts-run is created for the first chart at its Pod Security level and must follow each chart's
level afterwards (cntk-dist needs baseline; the others run under restricted), and each chart's CPU values must
run something that succeeds on the local images (cntk-dist's has no CNTK). A namespace dlcharts did not create is
never relabelled: a chart it would refuse is refused before anything is installed.
"""

from __future__ import annotations

import uuid

import pytest

from dlcharts.cli import main
from dlcharts.cluster import ClusterHandle
from dlcharts.install import Kube
from dlcharts.install.namespaces import ENFORCE, pod_security_labels
from tests.support import CHARTS

pytestmark = pytest.mark.cluster

DEFAULT_NAMESPACE = "dlcharts-run"
#: restricted first (the namespace is created for it), then baseline, then back to restricted
ORDER = ("pytorch-dist", "mxnet-dist", "horovod-mpi", "cntk-dist", "tensorflow-dist")


def _enforced(kube: Kube, namespace: str) -> str:
    return kube.get(f"/api/v1/namespaces/{namespace}")["metadata"]["labels"][ENFORCE]


def test_every_chart_runs_one_after_another_in_the_default_namespace(
    embedded_cluster: ClusterHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        if kube.get_or_none(f"/api/v1/namespaces/{DEFAULT_NAMESPACE}") is not None:
            embedded_cluster.delete_namespace(DEFAULT_NAMESPACE)
        levels = []
        for chart in ORDER:
            code = main(["run", str(CHARTS / chart), "--cluster-name", embedded_cluster.name, "--set", "worker=2"])
            out, err = capsys.readouterr()
            assert code == 0, f"dlcharts run charts/{chart} --set worker=2 exited {code}:\n{out[-6000:]}{err}"
            assert "job succeeded" in out, out[-3000:]
            levels.append(_enforced(kube, DEFAULT_NAMESPACE))
            if chart == "cntk-dist":
                assert "mpi4py: rank 0 done" in out, out[-3000:]  # its CPU values' program ran on every rank
                assert f"namespace {DEFAULT_NAMESPACE}: Pod Security restricted -> baseline" in out, out[:3000]
    assert levels == ["restricted", "restricted", "restricted", "baseline", "restricted"]


def test_a_namespace_dlcharts_did_not_create_is_refused_before_installing(
    embedded_cluster: ClusterHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace = f"theirs-{uuid.uuid4().hex[:6]}"
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        body = {"metadata": {"name": namespace, "labels": pod_security_labels("restricted")}}
        assert kube.request("POST", "/api/v1/namespaces", body=body).status == 201
        try:
            code = main(["run", str(CHARTS / "cntk-dist"), "-n", namespace, "--cluster-name", embedded_cluster.name])
            err = capsys.readouterr().err
            assert code == 2, err
            assert f"namespace {namespace} enforces Pod Security 'restricted'" in err, err
            assert "needs 'baseline'" in err and "-n/--namespace" in err and "kubectl label namespace" in err, err
            assert kube.items(f"/api/v1/namespaces/{namespace}/pods") == []
            assert kube.items(f"/api/v1/namespaces/{namespace}/secrets", label_selector="owner=helm") == []
            assert _enforced(kube, namespace) == "restricted"  # left as its owner set it
        finally:
            embedded_cluster.delete_namespace(namespace, wait=False)
