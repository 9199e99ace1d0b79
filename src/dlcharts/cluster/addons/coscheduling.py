"""Gang scheduling as an add-on: kube-scheduler from ``sigs.k8s.io/scheduler-plugins`` as a second scheduler with
its coscheduling plugin and its controller (see dlcharts.cluster.addons)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster.addons.common import Workspace, wait_established
from dlcharts.errors import ClusterError
from dlcharts.install.kube import Kube
from dlcharts.utils.net import free_port

#: the second scheduler's name: the charts' default gang.schedulerName for gang.scheduler=scheduler-plugins
COSCHEDULER_NAME = "scheduler-plugins-scheduler"


def start(ws: Workspace, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
    """Install the PodGroup and ElasticQuota CRDs and start the second scheduler and its controller."""
    exe, controller = exes["scheduler-plugins"], exes["scheduler-plugins-controller"]
    manifests = exe.parent / "manifests" / "coscheduling"
    files = [manifests / "crd.yaml", exe.parent / "manifests" / "scheduling.x-k8s.io_elasticquotas.yaml"]
    crds = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
    for crd in crds:
        kube.apply(crd)
    wait_established(kube, [c["metadata"]["name"] for c in crds], timeout)
    config = coscheduling_configuration(manifests / "scheduler-config.yaml", kubeconfig)
    work = ws.dir / "coscheduling"
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    # A gang turned down for want of GPUs is retried on a new pod or PodGroup change, else once it has waited
    # --pod-max-in-unschedulable-pods-duration (5 min by default); the pods that free the GPUs do not count.
    # 20 s here, so that a gang starts soon after the GPUs it needs are free.
    argv = [str(exe), f"--config={work / 'config.yaml'}", "--bind-address=127.0.0.1", f"--secure-port={port}",
            "--pod-max-in-unschedulable-pods-duration=20s"]  # fmt: skip
    ws.spawn("coscheduling", argv, kubeconfig)
    ws.wait_serving("coscheduling", f"https://127.0.0.1:{port}/healthz", timeout)
    # the controller keeps each PodGroup's status: its updates are what requeue a gang the scheduler turned down
    probe = free_port()
    argv = [str(controller), "--metricsAddr=0", f"--probeAddr=127.0.0.1:{probe}"]
    name = "coscheduling-controller"
    ws.spawn(name, argv, kubeconfig)
    ws.wait_serving(name, f"http://127.0.0.1:{probe}/readyz", timeout)


def coscheduling_configuration(path: Path, kubeconfig: Path) -> dict[str, Any]:
    """scheduler-plugins' coscheduling configuration, its one profile named :data:`COSCHEDULER_NAME`."""
    config = yaml.safe_load(path.read_text())
    profiles = config.get("profiles") or []
    if len(profiles) != 1:
        raise ClusterError(f"{path} has {len(profiles)} scheduler profiles, expected one; its layout changed")
    profiles[0]["schedulerName"] = COSCHEDULER_NAME
    config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    config["leaderElection"] = {"leaderElect": False}
    return dict(config)
