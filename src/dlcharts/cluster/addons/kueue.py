"""Kueue as an add-on: its own Helm chart (``charts/kueue``) rendered by the pinned helm; its CRDs and webhook
configurations applied, its manager a process on this machine (see dlcharts.cluster.addons)."""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from dlcharts.cluster.addons.common import Workspace, chart_objects, url_client_config, wait_established
from dlcharts.errors import ClusterError
from dlcharts.host import pki
from dlcharts.install.kube import Kube, status_message
from dlcharts.utils.net import free_port
from dlcharts.waiting import poll

KUEUE_NAMESPACE = "kueue-system"
#: Kueue integrations the charts need: each role's Job, and pods for kueue.podGroup (one workload per release)
KUEUE_FRAMEWORKS = ("batch/job", "pod")


def start(ws: Workspace, kube: Kube, kubeconfig: Path, exes: dict[str, Path], timeout: float) -> None:
    """Install Kueue from its chart and start its manager (as root: see the mount namespace below)."""
    exe = exes["kueue"]
    if os.geteuid() != 0:  # the mount namespace below
        raise ClusterError(
            "the kueue add-on needs root (it mounts its metrics certificate folder in a mount namespace of its "
            "own, as the real node needs root); run `dlcharts cluster up --kueue` as root"
        )
    work = ws.dir / "kueue"
    certs = work / "certs"
    ca = pki.sign(ws.state_dir, certs / "tls.crt", certs / "tls.key", "/CN=kueue-webhook", ["IP:127.0.0.1"])
    webhook_port, health_port = free_port(), free_port()
    docs = chart_objects(exe.parent / "manifests" / "kueue", "kueue", KUEUE_NAMESPACE)
    to_url = url_client_config(webhook_port, base64.b64encode(ca.read_bytes()).decode())
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}})
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    for crd in crds:
        with contextlib.suppress(KeyError):
            to_url(crd["spec"]["conversion"]["webhook"]["clientConfig"])
        kube.apply(crd)
    wait_established(kube, [c["metadata"]["name"] for c in crds], timeout)
    config = kueue_configuration(docs, webhook_port, health_port, certs)
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    # Without its own certificate management Kueue reads a metrics certificate from /etc/kueue/metrics/certs (a
    # fixed path in its main.go; the chart mounts a Secret there). The process gets that folder in a mount
    # namespace of its own, where an overlay adds it to /etc; the host's /etc stays as it is.
    extra_etc = work / "etc"
    metrics_certs = extra_etc / "kueue" / "metrics" / "certs"
    metrics_certs.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        shutil.copyfile(certs / name, metrics_certs / name)
    argv = [str(exe), f"--config={work / 'config.yaml'}", "--zap-log-level=2"]
    overlay = f'mount -t overlay dlcharts-kueue -o lowerdir={extra_etc}:/etc /etc && exec "$0" "$@"'
    ws.spawn("kueue", ["unshare", "--mount", "--propagation", "private", "sh", "-c", overlay, *argv], kubeconfig)
    ws.wait_serving("kueue", f"http://127.0.0.1:{health_port}/readyz", timeout)
    for doc in docs:
        if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for hook in doc.get("webhooks") or []:
                to_url(hook["clientConfig"])
            kube.apply(doc)
    poll(lambda: suspends_jobs(kube), timeout, "Kueue's webhook to suspend a queued Job (dry run)")


def kueue_configuration(docs: list[dict[str, Any]], webhook_port: int, health_port: int, certs: Path) -> dict[str, Any]:
    """The chart's manager configuration, changed where a process on this machine differs from the chart's pod."""
    maps = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-manager-config")]
    if len(maps) != 1:
        raise ClusterError("Kueue's chart rendered no single *-manager-config ConfigMap; its layout changed")
    config = yaml.safe_load(maps[0]["data"]["controller_manager_config.yaml"])
    config.update(
        namespace=KUEUE_NAMESPACE,
        webhook={"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
        health={"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        metrics={"bindAddress": "0"},
        leaderElection={"leaderElect": False},
        internalCertManagement={"enable": False},
    )
    config.setdefault("integrations", {})["frameworks"] = list(KUEUE_FRAMEWORKS)
    config.setdefault("featureGates", {})["VisibilityOnDemand"] = False
    return dict(config)


def suspends_jobs(kube: Kube) -> bool:
    """Whether Kueue's webhook suspends a queued Job (a dry-run create): the sign that it admits by queue."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "kueue-probe", "labels": {"kueue.x-k8s.io/queue-name": "probe"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "probe"}]}}},
    }
    resp = kube.request("POST", "/apis/batch/v1/namespaces/default/jobs", query={"dryRun": "All"}, body=job)
    if resp.status != 201:
        # retried: the API server may not have loaded the webhook configurations yet
        raise RuntimeError(f"a dry-run Job create failed with Kueue installed: {status_message(resp.doc)}")
    return bool(resp.doc["spec"].get("suspend"))
