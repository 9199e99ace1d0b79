"""pytest-helm-charts (Giant Swarm's plugin, named in the product card) works against the embedded cluster.

Its `kube_cluster` fixture takes the cluster from its command-line options (`--cluster-type existing
--kubeconfig PATH`), which a running session cannot change, so an inner pytest run in a subprocess gets
them, pointing at this session's cluster. The inner test uses its `kube_cluster` and `namespace_factory`
fixtures together with this harness: our API client sees the namespace its factory made (same uid), a chart
is installed there with dlcharts.install and waited for, and its pykube client lists the Job. After the
inner run, the factory has deleted its namespace, and our harness sees it gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from dlcharts.install.kube import Kube
from tests.support import ROOT

pytestmark = pytest.mark.cluster

INNER_TEST = """
import json
import os
from pathlib import Path

import pykube

from dlcharts.helm import find_helm
from dlcharts.install import ChartSource, Kube, Release, install, uninstall, wait_ready
from dlcharts.waiting import poll


def test_a_chart_in_a_namespace_from_the_factory(kube_cluster, namespace_factory, cluster_type):
    assert cluster_type == "existing"
    name = os.environ["INTEROP_NAMESPACE"]
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    namespace = namespace_factory(name, extra_metadata={"labels": labels})
    kubeconfig = Path(kube_cluster.kube_config_path)
    with Kube.from_kubeconfig(kubeconfig) as kube:
        seen = kube.get(f"/api/v1/namespaces/{name}")
        assert seen["metadata"]["uid"] == namespace.obj["metadata"]["uid"]
        assert seen["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        poll(lambda: kube.get_or_none(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 60, "default SA")
        release = Release(find_helm("helm-v4.3.1"), kubeconfig, "interop", name)
        install(kube, release, ChartSource(Path(os.environ["INTEROP_CHART"]), set_values=("worker=2",)))
        ready = wait_ready(kube, name, "interop")
        jobs = pykube.Job.objects(kube_cluster.kube_client).filter(namespace=name)
        assert {job.name for job in jobs} == {"interop-worker", "interop-start-watch"}
        Path(os.environ["INTEROP_OUT"]).write_text(json.dumps({
            "uid": seen["metadata"]["uid"],
            "workers": ready.nodes_of("Job/interop-worker"),
        }))
        uninstall(kube, release)
"""


def test_kube_cluster_and_namespace_factory_work_on_the_embedded_cluster(
    cluster: Any, kube: Kube, tmp_path: Path
) -> None:
    name = f"interop-{uuid.uuid4().hex[:6]}"
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "INTEROP_NAMESPACE": name,
        "INTEROP_CHART": str(ROOT / "charts" / "tensorflow-dist"),
        "INTEROP_OUT": str(out),
        "DLCHARTS_TOOLS_DIR": str(ROOT / ".tools"),
    }
    env.pop("KUBECONFIG", None)  # the option below is what must point it at the cluster
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_inner.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-W",
            "ignore::pytest.PytestWarning",
            "--cluster-type",
            "existing",
            "--kubeconfig",
            str(cluster.kubeconfig),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    assert "1 passed" in report, report
    result = json.loads(out.read_text())
    assert result["uid"]
    assert len(result["workers"]) == 2 and all(result["workers"]), result
    # namespace_factory deletes (and waits for) the namespaces it made when its scope ends
    assert kube.get_or_none(f"/api/v1/namespaces/{name}") is None
