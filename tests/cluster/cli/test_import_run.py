"""An imported Kubeflow job trains for real: a PyTorchJob (a master and a worker that run `python -u` on the chart's
own DDP benchmark, CPU resources, an env variable) goes through `dlcharts import`, and its values file through the
path of `dlcharts run -f` (the CPU values first, then the file) on the embedded cluster's real node."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dlcharts.images.definitions import IMAGES
from dlcharts.install import Kube
from dlcharts.jobs import importer
from tests.support.real_node import assert_spread

pytestmark = pytest.mark.cluster

IMAGE = IMAGES["pytorch"]
REPLICA = {
    "replicas": 1,
    "restartPolicy": "Never",
    "template": {
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": IMAGE.reference,
                    "command": ["python", "-u", "/opt/dl-charts/bench_ddp.py"],
                    "args": ["--steps", "4", "--warmup-steps", "1", "--batch-size", "4", "--image-size", "16"],
                    "env": [{"name": "IMPORTED_FROM", "value": "kubeflow"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
                }
            ]
        }
    },
}
PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "kf-ddp"},
    "spec": {
        "runPolicy": {"backoffLimit": 0, "activeDeadlineSeconds": 600},
        "pytorchReplicaSpecs": {"Master": REPLICA, "Worker": REPLICA},
    },
}


def test_imported_pytorchjob_trains_through_dlcharts_run(real_run: Any, embedded_cluster: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "pytorchjob.yaml"
    manifest.write_text(yaml.safe_dump(PYTORCHJOB))
    (job,) = importer.read(manifest)
    ((_, values, _),) = importer.write([job], tmp_path / "kf-ddp.yaml")
    assert job.chart == "pytorch-dist" and values is not None
    result, log = real_run("pytorch-dist", "kf-ddp", "-f", str(values))
    assert result.ok, result.problem
    assert [(p.phase, p.exit_code) for p in result.pods] == [("Succeeded", 0)] * 2
    assert_spread(result.pods, embedded_cluster)
    assert result.jobs == {"kf-ddp-worker": "Complete"}
    with Kube.from_kubeconfig(embedded_cluster.kubeconfig) as kube:
        worker = kube.get(f"/apis/batch/v1/namespaces/{real_run.namespace}/jobs/kf-ddp-worker")
    spec = worker["spec"]
    assert (spec["backoffLimit"], spec["backoffLimitPerIndex"], spec["activeDeadlineSeconds"]) == (0, 0, 600)
    container = spec["template"]["spec"]["containers"][0]
    assert {"name": "IMPORTED_FROM", "value": "kubeflow"} in container["env"]
    assert container["resources"]["limits"]["memory"] == "2Gi"
    # the master became worker 0; torchrun gave the `python` program its rank and world size, one process per pod
    for rank in range(2):
        assert re.search(rf"\[kf-ddp-worker-{rank}-\w+/worker\] bench_ddp: rank {rank}/2 on kf-ddp-worker-{rank} ", log)
    checksums = dict(re.findall(r"bench_ddp: rank (\d) final parameters sha256 ([0-9a-f]{64})", log))
    assert sorted(checksums) == ["0", "1"] and len(set(checksums.values())) == 1, log
