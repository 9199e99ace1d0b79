"""tensorflow-dist trains for real on the embedded cluster's real node: the chart's own benchmark, the local
TensorFlow CPU image pulled from the cluster's registry through `global.imageRegistry`, in a namespace that
enforces Pod Security `restricted`.

This proves what kwok cannot: the peer-wait init container resolves every peer through CoreDNS, TF_CONFIG
builds a live MultiWorkerMirroredStrategy cluster whose all-reduce crosses both pods, and the Indexed Job
completes. The image comes from dlcharts.images (cached by content; a cold build takes about 3.5 minutes).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import cluster_env
import pytest
import yaml

from dlcharts.cluster import ClusterHandle, node
from dlcharts.helm import find_helm
from dlcharts.images.build import Builder
from dlcharts.images.definitions import IMAGES
from dlcharts.install import ChartSource, Kube, Release, install, wait_ready
from dlcharts.install.namespaces import delete_namespace

pytestmark = pytest.mark.cluster

CHART = Path(__file__).resolve().parents[2] / "charts" / "tensorflow-dist"
STEPS = 20


@pytest.fixture(scope="module")
def tensorflow_registry(embedded_cluster: ClusterHandle) -> str:
    """The cluster registry, holding the TensorFlow CPU image under the path the chart's values name."""
    images = embedded_cluster.images
    assert images is not None, "the session's cluster was started without its real node"
    builder = Builder()
    builder.push(builder.build(IMAGES["tensorflow"]), images.registry)
    return images.registry


def cpu_values(registry: str, workers: int) -> dict[str, object]:
    """tensorflow-dist on the real node: CPU only, small pods and a short benchmark."""
    return {
        "worker": workers,
        "global": {"imageRegistry": registry},
        "benchmark": {"steps": STEPS, "warmupSteps": 2, "batchSize": 8, "imageSize": 32},
        "defaults": {
            "image": {"tag": IMAGES["tensorflow"].tag},
            "gpu": {"count": 0},
            "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "3Gi"}},
            "shm": {"sizeLimit": "512Mi"},
            "nodeSelector": dict(node.NODE_SELECTOR),
            "tolerations": [dict(node.TOLERATION)],
        },
    }


@pytest.fixture
def restricted_namespace(embedded_cluster: ClusterHandle) -> Iterator[str]:
    name = f"tf-{uuid.uuid4().hex[:6]}"
    embedded_cluster.create_namespace(name, "restricted")
    yield name
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        delete_namespace(kube, name)


def test_multi_worker_mirrored_trains_across_two_pods(
    embedded_cluster: ClusterHandle, tensorflow_registry: str, restricted_namespace: str, tmp_path: Path
) -> None:
    values = tmp_path / "cpu-values.yaml"
    values.write_text(yaml.safe_dump(cpu_values(tensorflow_registry, workers=2)))
    release = Release(find_helm(), embedded_cluster.kubeconfig, "tf-train", restricted_namespace)
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        install(kube, release, ChartSource(CHART, values_files=(values,)))
        placement = wait_ready(kube, restricted_namespace, "tf-train", timeout=600)
    assert placement.nodes_of("Job/tf-train-worker") == ["real-0", "real-0"], placement
    assert set(placement.jobs) == {"tf-train-worker"}, placement.jobs
    logs = {}
    for index in range(2):
        proc = cluster_env.kubectl(
            embedded_cluster.kubeconfig, "logs", "--tail=-1", "-n", restricted_namespace, "-c", "worker",
            "-l", f"batch.kubernetes.io/job-name=tf-train-worker,batch.kubernetes.io/job-completion-index={index}",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        logs[index] = proc.stdout
    for index, text in logs.items():
        assert f"worker {index} on tf-train-worker-{index}, strategy multi-worker-mirrored" in text, text
    assert f"step {STEPS}/{STEPS} loss" in logs[0], logs[0]
    assert "over 2 replica(s)" in logs[0], logs[0]
